package suiterun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/agent/agenttest"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/testwait"
)

// An interrupt (Ctrl-C: the context cancelled) while a trial runs: that
// trial and the ones not started are errors saying so, none counts as
// passed (the cases have no assertion that could fail), the other
// runtime's group does not start, and no trial workspace is left behind.
func TestRunInterrupted(t *testing.T) {
	s := agenttest.Settings(t, "")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cases.jsonl": `{"name":"slow","plan":"plans/slow.jsonl","fixture":"fx","flags":{"yes":true}}` + "\n" +
			`{"name":"next","plan":"plans/slow.jsonl","fixture":"fx","flags":{"yes":true}}` + "\n" +
			`{"name":"other","plan":"plans/slow.jsonl","flags":{"yes":true,"read_only":true}}` + "\n",
		"plans/slow.jsonl": `{"tool":"run_command","args":{"command":"sh -c \"touch started; sleep 60\""}}` + "\n" + `{"tool":"final_answer","args":{"answer":"done"}}` + "\n",
		"fx/a.txt":         "a\n",
	})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := 0
	open := func(ctx context.Context, s *config.Settings, o agent.Options) (*agent.Runtime, error) {
		opened++
		rt, err := agent.Open(ctx, s, o)
		if err == nil && opened == 1 {
			// Cancel once the first trial's command runs: its
			// workspace gets the file it touches.
			go func() {
				testwait.Until(2*time.Minute, func() bool {
					m, _ := filepath.Glob(filepath.Join(tmp, "tact-test-*", "started"))
					return len(m) > 0
				})
				cancel()
			}()
		}
		return rt, err
	}
	res, err := Run(ctx, loadSuite(t, dir), Options{Settings: s, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || opened != 1 {
		t.Fatalf("%d results, %d runtimes opened; want 3, 1: %+v", len(res), opened, res)
	}
	for _, r := range res {
		if r.Passed() || r.ExitCode != 130 || !strings.Contains(r.Error, "interrupted") {
			t.Errorf("%s: %+v, want an interrupted error", r.Case, r)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}

// A runtime that opens for no group is a suite that cannot run (exit 2),
// however many groups the cases' flags make; one that fails for a group
// only is its cases' error, and the others run.
func TestRunNoRuntime(t *testing.T) {
	s := agenttest.Settings(t, "")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cases.jsonl": `{"name":"a","plan":"plans/p.jsonl","assert":[{"jq":".success"}]}` + "\n" +
			`{"name":"b","plan":"plans/p.jsonl","flags":{"read_only":true},"assert":[{"jq":".success"}]}` + "\n",
		"plans/p.jsonl": `{"tool":"final_answer","args":{"answer":"ok"}}` + "\n",
	})
	suite := loadSuite(t, dir)
	never := func(ctx context.Context, s *config.Settings, o agent.Options) (*agent.Runtime, error) {
		return nil, errors.New("model m.gguf: no such file")
	}
	if _, err := Run(context.Background(), suite, Options{Settings: s, Open: never}); err == nil || err.Error() != "model m.gguf: no such file" {
		t.Fatalf("err = %v, want the runtime's", err)
	}
	notReadOnly := func(ctx context.Context, s *config.Settings, o agent.Options) (*agent.Runtime, error) {
		if s.ReadOnly {
			return nil, errors.New("no read-only runtime")
		}
		return agent.Open(ctx, s, o)
	}
	res, err := Run(context.Background(), suite, Options{Settings: s, Open: notReadOnly})
	if err != nil || len(res) != 2 || !res[0].Passed() || res[1].Error != "no read-only runtime" {
		t.Fatalf("%+v, %v: want a passed, b's error", res, err)
	}
}
