package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/llm/llamacpp"
)

// The tact serve load test (-only serve): closed-loop clients posting
// react_step requests to `tact serve` on loopback, back to back, for a
// fixed time at each client count; requests/s and p50/p99 latency. Two
// servers: the script backend (canned replies: the HTTP, queue and step
// overhead alone) and the generated tiny model (real decoding, 16 parallel
// sequences). The whole part takes under 30 s and stops by itself.

var serveClients = []int{1, 4, 16}

const (
	serveScriptLevel = 2500 * time.Millisecond // per client count, script backend
	serveModelLevel  = 4 * time.Second         // per client count, tiny model
	serveScriptCap   = 20000                   // requests per level at most (the script's replies are used up)
)

// serveStep is the request every client sends: one step with one tool.
var serveStep = []byte(`{"user_query": "Where is login implemented?", "max_iterations_left": 3, "tools": [` +
	`{"name": "code_search", "description": "Search the code.", "parameters": {"type": "object", "properties": {"query": {"type": "string", "minLength": 1}}, "required": ["query"], "additionalProperties": false}}]}`)

type serveLevel struct {
	clients  int
	requests int
	errors   int            // transport errors and non-200 answers
	statuses map[string]int // step statuses of the 200s
	wall     time.Duration
	p50, p99 time.Duration
}

type serveResult struct {
	label  string
	args   string
	levels []serveLevel
}

func serveBench(threads int) error {
	c, cleanup, err := newConcBench("", threads)
	if err != nil {
		return err
	}
	defer cleanup()
	tiny, err := synth.Ensure(synth.CacheDir(), synth.Tiny)
	if err != nil {
		return err
	}
	// The script backend replays one reply per call: enough for every level.
	var script bytes.Buffer
	reply, _ := json.Marshal(map[string]string{"kind": "action", "text": `{"thought":"search for the login code first","tool":"code_search","args":{"query":"login"}}`})
	for range serveScriptCap * len(serveClients) {
		script.Write(reply)
		script.WriteByte('\n')
	}
	scriptPath := filepath.Join(c.work, "replies.jsonl")
	if err := os.WriteFile(scriptPath, script.Bytes(), 0o644); err != nil {
		return err
	}
	common := []string{"--workspace", filepath.Join(c.work, "ws"), "--parallel", "16", "--queue", "64"}
	if threads > 0 {
		common = append(common, "--threads", strconv.Itoa(threads))
	}
	var results []serveResult
	for _, srv := range []struct {
		label, shown string
		args         []string
		level        time.Duration
	}{
		{"script backend", "--parallel 16 --script FILE", []string{"--script", scriptPath}, serveScriptLevel},
		{"tiny model", "--parallel 16 --model tiny --ctx-size 2048 --max-tokens 128",
			[]string{"--model", tiny, "--ctx-size", "2048", "--max-tokens", "128", "--seed", "1"}, serveModelLevel},
	} {
		progress("serve: %s", srv.label)
		r, err := c.serveLoad(append(append([]string{}, common...), srv.args...), srv.level)
		if err != nil {
			return fmt.Errorf("serve, %s: %w", srv.label, err)
		}
		r.label, r.args = srv.label, srv.shown
		results = append(results, r)
	}
	reportServe(results, threads)
	return nil
}

// serveLoad starts tact serve with args, runs every client count for
// level each, and stops the server with SIGTERM.
func (c *concBench) serveLoad(args []string, level time.Duration) (serveResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tact, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = c.env(true)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	// stderr: the listening line (the port), then one line per request,
	// read and dropped as a log collector would.
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return serveResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return serveResult{}, err
	}
	addr := make(chan string, 1)
	var head bytes.Buffer // the lines before the listening one, for errors
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		found := false
		for sc.Scan() {
			if found {
				continue
			}
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				found = true
				addr <- line.Addr
				continue
			}
			head.Write(append(sc.Bytes(), '\n'))
		}
		close(addr)
	}()
	a, ok := <-addr
	if !ok {
		cmd.Wait()
		return serveResult{}, fmt.Errorf("tact serve did not start:\n%s", head.String())
	}
	base := "http://" + a
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	if err := waitHealthy(ctx, client, base); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return serveResult{}, err
	}
	var r serveResult
	for _, n := range serveClients {
		progress("serve: %d clients for %s", n, level)
		r.levels = append(r.levels, loadLevel(client, base, n, level))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		return r, fmt.Errorf("tact serve after SIGTERM: %v", err)
	}
	return r, nil
}

func waitHealthy(ctx context.Context, client *http.Client, base string) error {
	for {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("tact serve did not become healthy")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// loadLevel runs n clients, each posting steps back to back, until d is over.
func loadLevel(client *http.Client, base string, n int, d time.Duration) serveLevel {
	lv := serveLevel{clients: n, statuses: map[string]int{}}
	var mu sync.Mutex
	var lat []time.Duration
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				mu.Lock()
				full := lv.requests >= serveScriptCap
				mu.Unlock()
				if full {
					return
				}
				t0 := time.Now()
				resp, err := client.Post(base+"/api/agent/react_step", "application/json", bytes.NewReader(serveStep))
				var status string
				code := 0
				if err == nil {
					var sr struct {
						Status string `json:"status"`
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					_ = json.Unmarshal(b, &sr)
					status, code = sr.Status, resp.StatusCode
				}
				took := time.Since(t0)
				mu.Lock()
				lv.requests++
				if code != http.StatusOK {
					lv.errors++
				} else {
					lv.statuses[status]++
					lat = append(lat, took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	lv.wall = time.Since(start)
	slices.Sort(lat)
	if len(lat) > 0 {
		lv.p50 = lat[len(lat)*50/100]
		lv.p99 = lat[min(len(lat)-1, (len(lat)*99+99)/100-1)]
	}
	return lv
}

func reportServe(rs []serveResult, threads int) {
	if threads <= 0 {
		threads = llamacpp.PhysicalCores()
	}
	fmt.Printf("## tact serve under load\n\n")
	fmt.Printf("Machine: %s, %d logical CPUs (clients, server and model share them); %d threads; %s/%s, %s.\n",
		cpuModel(), runtime.NumCPU(), threads, runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Printf("Closed loop on loopback: N clients each post a one-tool `react_step` request as soon as the previous one is answered; %s per N with the script backend, %s with the tiny model.\n\n",
		serveScriptLevel, serveModelLevel)
	fmt.Println("| server | clients | requests | requests/s | p50 | p99 | step statuses | errors |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		for _, lv := range r.levels {
			var st []string
			for k, v := range lv.statuses {
				st = append(st, fmt.Sprintf("%s %d", k, v))
			}
			slices.Sort(st)
			fmt.Printf("| %s (`%s`) | %d | %d | %.1f | %s | %s | %s | %d |\n", r.label, r.args, lv.clients, lv.requests,
				float64(lv.requests)/lv.wall.Seconds(), ms(lv.p50), ms(lv.p99), strings.Join(st, ", "), lv.errors)
		}
	}
}

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000)
}
