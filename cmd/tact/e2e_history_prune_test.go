package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/history"
)

// TestHistoryMaxSizeHoldsFromTheNextRun: a history over a lowered
// --history-max-size is pruned by the next command, before that command
// exits, even one that only ran a short plan, and even when another prune
// ran an hour ago (not only at the next day's prune, nor in a background
// goroutine the exit cuts short).
func TestHistoryMaxSizeHoldsFromTheNextRun(t *testing.T) {
	h := newHistEnv(t)
	// About 4 MB of earlier runs, and a prune just done.
	st := h.store()
	text := strings.Repeat("some observed output ", 500)
	for i := range 400 {
		rec := st.Begin(history.Run{ID: fmt.Sprintf("old%03d", i), StartedAt: time.Now().Add(-time.Duration(400-i) * time.Minute)})
		rec.Step(history.Step{Index: 0, Observation: fmt.Sprintf("%d %s", i, text)})
		rec.End(history.Final{Reason: "answered"})
	}
	if _, _, err := st.MaybePrune(context.Background(), 0, 0); err != nil {
		t.Fatal(err)
	}
	st.Close()
	before := usedBytes(t, h.statePath())
	if before < 3<<20 {
		t.Fatalf("seeded %d bytes, want over 3 MiB", before)
	}
	plan := h.write("plan.jsonl", `{"type":"plan","query":"say hi"}
{"step":1,"tool":"final_answer","args":{"answer":"hi"}}
`)
	out, errOut, code := h.run("", "exec", "--history-max-size", "1MiB", plan)
	if code != 0 || strings.TrimSpace(out) != "hi" {
		t.Fatalf("exit %d, %q: %s", code, out, errOut)
	}
	if after := usedBytes(t, h.statePath()); after > 1<<20 {
		t.Fatalf("the history holds %d bytes after the run (%d before), over --history-max-size 1MiB", after, before)
	}
}

// usedBytes is the size of the database's pages in use.
func usedBytes(t *testing.T, path string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pages, free, size int64
	if err := db.QueryRow("SELECT p.page_count, f.freelist_count, s.page_size FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s").Scan(&pages, &free, &size); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return (pages - free) * size
}
