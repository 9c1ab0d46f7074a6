package server

import (
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/schema"
)

func nestedToolSchema(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// A client tool schema nesting 2,500 objects (92 KB) is refused at once
// with the limit named, before admission; one just under the limits is
// answered; and compiling a schema waits for a sequence: with the only
// one busy and no queue, a schema that does not compile gets 429, not a
// minute of CPU.
func TestStepToolSchemaLimits(t *testing.T) {
	fk := &fake{delay: 300 * time.Millisecond, started: make(chan struct{}, 4)}
	e := newEnv(t, Config{Parallel: 1, Queue: 0}, fk, "", nil)

	deep := `{"user_query": "q", "tools": [{"name": "deep", "parameters": ` + nestedToolSchema(2500) + `}]}`
	start := time.Now()
	r := e.post("/api/agent/react_step", deep)
	if took := time.Since(start); r.code != 400 || !strings.Contains(string(r.body), "tools[0].parameters: the schema nests 5001 levels deep, at most 64") || took > 10*time.Second {
		t.Fatalf("%d %s after %s", r.code, r.body, took)
	} else {
		t.Logf("%d-byte body nesting 2,500 objects: %d after %s", len(deep), r.code, took)
	}
	wide := `{"user_query": "q", "tools": [{"name": "wide", "parameters": {"type": "object", "description": "` + strings.Repeat("x", schema.MaxToolSchemaBytes) + `"}}]}`
	if r := e.post("/api/agent/react_step", wide); r.code != 400 || !strings.Contains(string(r.body), "at most 65536 (the limit on one tool's schema)") {
		t.Fatalf("%d %s", r.code, r.body)
	}

	under := `{"user_query": "q", "tools": [{"name": "under", "parameters": ` + nestedToolSchema(schema.MaxToolSchemaDepth/2-1) + `}]}`
	done := make(chan reply)
	go func() { done <- e.post("/api/agent/react_step", under) }()
	<-fk.started
	bad := `{"user_query": "q", "tools": [{"name": "bad", "parameters": {"type": "object", "properties": {"x": {"type": 7}}}}]}`
	if r := e.post("/api/agent/react_step", bad); r.code != 429 {
		t.Fatalf("a schema was compiled before admission: %d %s", r.code, r.body)
	}
	if r := <-done; r.code != 200 {
		t.Fatalf("just under the limits: %d %s", r.code, r.body)
	}
	if r := e.post("/api/agent/react_step", bad); r.code != 400 || !strings.Contains(string(r.body), "tools[0].parameters: schema:") {
		t.Fatalf("%d %s", r.code, r.body)
	}
}
