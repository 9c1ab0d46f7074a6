package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// -o (issue 26): tact killed while it writes the output file leaves the
// old file whole (or, had the write won the race, the new one), never a
// part of the new answer.
func TestE2EOutputFileKilledDuringWrite(t *testing.T) {
	c := newE2E(t)
	const old = "the old answer\n"
	// The answer is written into the plan, not made by a $jq filter: a
	// filter that builds it may take longer than jq's 2 s bound on a
	// loaded machine. A plan line holds up to 16 MiB.
	const size = 12 << 20
	out := c.file("out.txt", old)
	plan := c.file("big.jsonl", `{"tool":"final_answer","args":{"answer":"`+strings.Repeat("x", size)+`"}}`+"\n")
	p := c.run("exec", "--workspace", c.ws, "--no-history", "-o", out, plan)
	// Kill tact the moment its temporary file appears beside out.txt: the
	// answer is then being written to it.
watch:
	for {
		if m, _ := filepath.Glob(filepath.Join(c.dir, ".out.txt.tmp-*")); len(m) > 0 {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			break
		}
		select {
		case <-p.done:
			t.Logf("tact finished before its temporary file was seen (exit %d)", p.cmd.ProcessState.ExitCode())
			break watch
		default:
			runtime.Gosched()
		}
	}
	p.wait(time.Minute)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case string(b) == old:
	case len(b) == size+1 && strings.Count(string(b), "x") == size:
		t.Log("the write finished before the kill: the new file is whole")
	default:
		t.Fatalf("out.txt holds %d bytes: neither the old file nor the whole new one", len(b))
	}

	// A run that is not cut replaces the file.
	p = c.run("exec", "--workspace", c.ws, "--no-history", "-o", out, plan)
	if code := p.wait(2 * time.Minute); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr.String())
	}
	if st, err := os.Stat(out); err != nil || st.Size() != size+1 {
		t.Fatalf("after a whole run out.txt: %v, %v", st, err)
	}
}
