package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
}
