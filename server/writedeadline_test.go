package server

// Clients that do not read their answers: every write to a client has a
// deadline (--write-timeout), so such a client is cut, its run cancelled
// and its sequence freed. The clients here are raw loopback TCP
// connections with a tiny receive buffer that send a request and never
// read; the server's listener gets a small send buffer, so its writes
// block after a few KiB instead of the megabytes that kernel autotuning
// would buffer first.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tactcli/tact/internal/testwait"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
)

const (
	testWriteTimeout = 200 * time.Millisecond
	// bigAnswer is far beyond what the small socket buffers hold.
	bigAnswer = 512 << 10
	// bound is how long anything here may take; the write timeout is a
	// fraction of it.
	bound = 10 * time.Second
)

func setBuf(opt, size int) func(_, _ string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, size) })
		return errors.Join(err, serr)
	}
}

// servingSmallBuffers serves e's server through Serve on a loopback
// listener whose connections inherit a 16 KiB send buffer; it returns
// the address.
func (e *testEnv) servingSmallBuffers() string {
	e.t.Helper()
	lc := net.ListenConfig{Control: setBuf(syscall.SO_SNDBUF, 16<<10)}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln) }()
	e.t.Cleanup(func() {
		cancel()
		<-served
	})
	return ln.Addr().String()
}

// stuckClient sends a POST of body to path on a connection with a tiny
// receive buffer and never reads the answer.
func stuckClient(t *testing.T, addr, path, body string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: setBuf(syscall.SO_RCVBUF, 1024)}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitBusy waits until n sequences are taken.
func (e *testEnv) waitBusy(n int) {
	e.t.Helper()
	waitUntil(e.t, fmt.Sprintf("%d sequences busy", n), func() bool { return e.srv.adm.busy() == n })
}

// waitUntil waits until cond holds, failing t after waitBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitBound bounds a wait for a state: generous, as a busy machine is
// slow, while a passing test waits only until the state is reached.
const waitBound = time.Minute

// eventually polls cond until it holds (true) or waitBound passes. It is
// these tests' one poll: they wait on a state, never for a fixed time.
func eventually(cond func() bool) bool { return testwait.Until(waitBound, cond) }

// waitClosed reads what the server had sent on c until the server closes
// the connection (net/http closes it as soon as a write fails).
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the stuck client's connection is still open after %s", bound)
	}
}

// logLines tees e's server log into a channel of request lines.
func (e *testEnv) logLines() <-chan map[string]any {
	ch := make(chan map[string]any, 64)
	e.srv.log = slog.New(slog.NewJSONHandler(io.MultiWriter(e.logs, lineFunc(func(l []byte) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil && m["msg"] == "request" {
			ch <- m
		}
	})), nil))
	return ch
}

// lineFunc gets each write: slog's handlers write a record at a time.
type lineFunc func([]byte)

func (f lineFunc) Write(p []byte) (int, error) {
	f(p)
	return len(p), nil
}

// waitLog waits for the request log line of path with status.
func (e *testEnv) waitLog(lines <-chan map[string]any, path string, status int) map[string]any {
	e.t.Helper()
	timeout := time.After(bound)
	for {
		select {
		case m := <-lines:
			if m["path"] == path && m["status"] == float64(status) {
				return m
			}
		case <-timeout:
			e.t.Fatalf("no %s line with status %d in the log:\n%s", path, status, e.logs.String())
		}
	}
}

// A client that sends a request and never reads holds its sequence no
// longer than one write timeout: another request is served (not 504
// behind it), the stuck run ends cancelled, the stuck connection is
// closed and logged as 499, for streamed runs, whole runs and steps.
func TestWriteTimeoutFreesSequence(t *testing.T) {
	answer := strings.Repeat("x", bigAnswer)
	bigPlan := toJSON(t, map[string]any{"tool": "final_answer", "args": map[string]any{"answer": answer}})
	for _, tc := range []struct {
		name, path, body string
		fk               *fake
		// ran: the stuck request's run is cancelled, not finished; the
		// trace records how it ended.
		cancelled bool
	}{
		// The plan event carries the whole plan: the run blocks writing it.
		{name: "streamed run", path: "/v1/runs", body: toJSON(t, map[string]any{"id": "stuck", "plan": bigPlan, "stream": true}), cancelled: true},
		// The run ends; its answer (the big final answer) is never read.
		{name: "whole run", path: "/v1/runs", body: toJSON(t, map[string]any{"id": "stuck", "plan": bigPlan})},
		// A step whose answer (the thought, twice) is never read.
		{name: "step", path: "/api/agent/react_step", body: `{"user_query": "q"}`, fk: &fake{reply: func(n int, _ llm.Request) string {
			if n > 1 {
				return `{"thought":"short","tool":"final_answer","args":{"answer":"done"}}`
			}
			return `{"thought":"` + answer + `","tool":"final_answer","args":{"answer":"done"}}`
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := ""
			e := newEnv(t, Config{Parallel: 1, Queue: 4, RequestTimeout: time.Minute, WriteTimeout: testWriteTimeout, MaxBody: 4 << 20}, tc.fk, "",
				func(s *config.Settings) { trace = filepath.Join(s.Workspace, "..", "trace.jsonl"); s.Trace = trace })
			lines := e.logLines()
			addr := e.servingSmallBuffers()
			stuck := stuckClient(t, addr, tc.path, tc.body)
			e.waitBusy(1)
			// The next request waits for the stuck one's sequence.
			start := time.Now()
			client := &http.Client{Timeout: bound}
			next := `{"plan": ` + toJSON(t, finalPlan) + `}`
			if tc.path != "/v1/runs" {
				next = `{"user_query": "q"}`
			}
			resp, err := client.Post("http://"+addr+tc.path, "application/json", strings.NewReader(next))
			if err != nil {
				t.Fatalf("the next request, behind the stuck client: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("the next request, behind the stuck client: %d %s", resp.StatusCode, b)
			}
			waitClosed(t, stuck)
			took := time.Since(start)
			if took > bound/2 {
				t.Fatalf("the stuck client held its sequence %s with --write-timeout %s", took, testWriteTimeout)
			}
			line := e.waitLog(lines, tc.path, statusClientGone)
			if msg, _ := line["error"].(string); !strings.Contains(msg, "--write-timeout 200ms") {
				t.Fatalf("log line of the stuck request: %v", line)
			}
			if !tc.cancelled {
				return
			}
			tr, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(tr), "\n") {
				var ev map[string]any
				if json.Unmarshal([]byte(l), &ev) == nil && ev["event"] == "termination" && ev["run_id"] == "stuck" {
					if ev["reason"] != "cancelled" {
						t.Fatalf("the stuck run ended %v, want cancelled", ev["reason"])
					}
					return
				}
			}
			t.Fatalf("the stuck run has no termination event:\n%.2000s", tr)
		})
	}
}

// The write timeout bounds a stall, not the whole answer: a client that
// reads a large answer slowly but steadily gets all of it, even when it
// takes many write timeouts; and a keep-alive connection that idles past
// the write timeout between requests is still served.
func TestWriteTimeoutSlowReader(t *testing.T) {
	answer := strings.Repeat("y", bigAnswer)
	const timeout = 500 * time.Millisecond
	e := newEnv(t, Config{WriteTimeout: timeout, MaxBody: 4 << 20}, nil, "", nil)
	addr := e.servingSmallBuffers()
	plan := toJSON(t, map[string]any{"tool": "final_answer", "args": map[string]any{"answer": answer}})
	body := toJSON(t, map[string]any{"plan": plan})
	d := net.Dialer{Control: setBuf(syscall.SO_RCVBUF, 4096)}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	start := time.Now()
	resp, err := client.Post("http://"+addr+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(got), err)
		}
		time.Sleep(10 * time.Millisecond) // a slow reader: a few KiB each time
	}
	resp.Body.Close()
	var res map[string]any
	if err := json.Unmarshal(got, &res); err != nil || resp.StatusCode != 200 || res["final_answer"] != answer {
		t.Fatalf("%d, %d bytes: %v", resp.StatusCode, len(got), err)
	}
	if took := time.Since(start); took < 2*timeout {
		t.Fatalf("the slow read took only %s; it must span several write timeouts", took)
	}
	// The same connection, idle for longer than the write timeout, then a
	// request that waits for 100 Continue (a write net/http makes itself).
	// The idle time is the case under test: a sleep, not a stand-in.
	time.Sleep(2 * timeout)
	reused := false
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/runs", strings.NewReader(`{"plan": `+toJSON(t, finalPlan)+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "planned answer") || !reused {
		t.Fatalf("%d %s (connection reused: %v)", resp.StatusCode, b, reused)
	}
	if strings.Contains(e.logs.String(), `"status":499`) {
		t.Fatalf("a reading client was cut:\n%s", e.logs.String())
	}
}
