package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 39: /v1/runs answers a run that pauses with needs_input and its
// question; POST /v1/runs/ID/answer continues it (as tact answer); a
// second answer is a 400.
func TestE2EServeAnswer(t *testing.T) {
	bin := e2eTact(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "s.jsonl")
	os.WriteFile(script, []byte(`{"kind":"action","text":"{\"thought\":\"ask which one it is\",\"tool\":\"ask_user\",\"args\":{\"question\":\"Which config?\"}}"}
{"kind":"action","expect":["the blue one"],"text":"{\"thought\":\"the user said blue\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"blue is live\"}}"}
`), 0o644)
	srv := startServe(t, bin, dir, []string{"serve", "--script", script, "--no-plan", "--workspace", ws, "--addr", "127.0.0.1:0"})
	client := &http.Client{Timeout: 2 * time.Minute}
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := client.Post(srv.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.NewDecoder(bytes.NewReader(b)).Decode(&m)
		return resp.StatusCode, m
	}
	code, res := post("/v1/runs", `{"query":"which config is live?"}`)
	q, _ := res["question"].(map[string]any)
	if code != 200 || res["termination_reason"] != "needs_input" || q["question"] != "Which config?" {
		t.Fatalf("/v1/runs: %d %v", code, res)
	}
	id, _ := res["run_id"].(string)
	code, res2 := post("/v1/runs/"+id+"/answer", `{"text":"the blue one"}`)
	if code != 200 || res2["termination_reason"] != "success" || res2["final_answer"] != "blue is live" {
		t.Fatalf("answer: %d %v", code, res2)
	}
	code, res3 := post("/v1/runs/"+id+"/answer", `{"text":"the red one"}`)
	if code != 400 || !strings.Contains(res3["error"].(string), "answered already") {
		t.Fatalf("second answer: %d %v", code, res3)
	}
	if code, _ := post("/v1/runs/"+id+"/answer", `{"nope":1}`); code != 400 {
		t.Errorf("unknown field: %d", code)
	}

	// A run paused in another workspace (a cron job's in another project,
	// the same state directory) is not answered here, where it would go
	// on in the server's workspace; the 400 does not name its workspace,
	// and the run still waits for tact answer.
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, int) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir, c.Env = other, srv.cmd.Env
		out, err := c.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, rc := cli("run", "--no-plan", "--script", script, "which config is live?")
	var pause struct {
		RunID string `json:"run_id"`
	}
	if rc != 12 || json.Unmarshal([]byte(out), &pause) != nil || pause.RunID == "" {
		t.Fatalf("cli run: exit %d: %s", rc, out)
	}
	code, res4 := post("/v1/runs/"+pause.RunID+"/answer", `{"text":"the blue one"}`)
	msg, _ := res4["error"].(string)
	if code != 400 || !strings.Contains(msg, "did not pause in this server's workspace") || strings.Contains(msg, other) {
		t.Fatalf("answer of another workspace's run: %d %v", code, res4)
	}
	if out, rc := cli("answer", pause.RunID, "the blue one"); rc != 0 || strings.TrimSpace(out) != "blue is live" {
		t.Fatalf("tact answer after the refusal: exit %d: %s", rc, out)
	}
}

// TestE2EServeAnswerConcurrent: 8 clients at once each start a run that
// pauses (/v1/runs: needs_input and the question), then, all at once, each
// answers its own run (POST /v1/runs/ID/answer): every run succeeds, with
// its own client's answer as the paused call's observation.
func TestE2EServeAnswerConcurrent(t *testing.T) {
	const clients = 8
	bin := e2eTact(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// The runs take the script's entries in any order: first the 8
	// questions (every run pauses before any is answered), then the 8
	// answers, each expecting a client's answer in its prompt.
	var b strings.Builder
	for range clients {
		b.WriteString(`{"kind":"action","text":"{\"thought\":\"ask which one it is\",\"tool\":\"ask_user\",\"args\":{\"question\":\"Which config?\"}}"}` + "\n")
	}
	for range clients {
		b.WriteString(`{"kind":"action","expect":["answer-of-client-"],"text":"{\"thought\":\"the user has answered\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"answered\"}}"}` + "\n")
	}
	script := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(script, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, bin, dir, []string{"serve", "--script", script, "--no-plan", "--workspace", ws, "--addr", "127.0.0.1:0"})
	client := &http.Client{Timeout: 2 * time.Minute}
	post := func(path, body string) (int, map[string]any, error) {
		resp, err := client.Post(srv.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var m map[string]any
		err = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m, err
	}
	ids := make([]string, clients)
	errs := make(chan error, 2*clients)
	var paused sync.WaitGroup
	for i := range clients {
		paused.Go(func() {
			code, res, err := post("/v1/runs", `{"query":"which config is live?"}`)
			q, _ := res["question"].(map[string]any)
			if err != nil || code != 200 || res["termination_reason"] != "needs_input" || q["question"] != "Which config?" {
				errs <- fmt.Errorf("client %d /v1/runs: %d %v %v", i, code, res, err)
				return
			}
			ids[i], _ = res["run_id"].(string)
		})
	}
	paused.Wait()
	var answered sync.WaitGroup
	for i := range clients {
		if ids[i] == "" {
			continue
		}
		answered.Go(func() {
			text := fmt.Sprintf("answer-of-client-%d", i)
			code, res, err := post("/v1/runs/"+ids[i]+"/answer", `{"text":"`+text+`"}`)
			if err != nil || code != 200 || res["termination_reason"] != "success" || res["final_answer"] != "answered" {
				errs <- fmt.Errorf("client %d answer: %d %v %v", i, code, res, err)
				return
			}
			// The paused call's observation is this client's answer.
			steps, _ := res["trace"].(map[string]any)["steps"].([]any)
			raw, _ := json.Marshal(steps)
			if !strings.Contains(string(raw), `"observation":"`+text+`"`) {
				errs <- fmt.Errorf("client %d: its run's steps do not hold its answer: %s", i, raw)
			}
		})
	}
	answered.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
