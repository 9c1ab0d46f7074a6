package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// An argument that is not a command is a typed usage error (exit 2), worded
// as cobra words it; without arguments tact shows its help.
func TestUnknownCommand(t *testing.T) {
	factoryEnv(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "tact" (tact --help lists them)`},
		{[]string{"rn", "q"}, `unknown command "rn" for "tact" (did you mean "run"?)`},
		{[]string{"mcp", "lst"}, `unknown command "lst" for "tact mcp" (did you mean "list"?)`},
		{[]string{"models", "lst"}, `unknown command "lst" for "tact models" (did you mean "list"?)`},
		{[]string{"models", "cache", "clr"}, `unknown command "clr" for "tact models cache" (did you mean "clear"?)`},
		{[]string{"log", "shw", "1"}, `unknown command "shw" for "tact log" (did you mean "show"?)`},
	} {
		f, opens, stdout, _ := countingFactory("")
		root, err := newRootCmd(f)
		if err != nil {
			t.Fatal(err)
		}
		root.SetArgs(tc.args)
		err = root.ExecuteContext(context.Background())
		var ee *exitError
		if !errors.As(err, &ee) || ee.Code != exitUsage || err.Error() != tc.msg || exitCode(err, 0) != exitUsage {
			t.Errorf("%q: %#v (%v), want exit 2 and %q", tc.args, err, err, tc.msg)
		}
		if stdout.Len() != 0 || *opens != 0 {
			t.Errorf("%q: %d opens, stdout %q", tc.args, *opens, stdout)
		}
	}
	f, _, stdout, _ := countingFactory("")
	root, _ := newRootCmd(f)
	root.SetArgs(nil)
	if err := root.ExecuteContext(context.Background()); err != nil || !strings.Contains(stdout.String(), "Usage:\n  tact [command]\n") {
		t.Errorf("no arguments: %v, stdout:\n%s", err, stdout)
	}
}

// The root runs (to check its arguments), yet every command's usage reads
// as cobra writes it for a root that does not: no "tact [flags]" line.
func TestUsageAsCobras(t *testing.T) {
	factoryEnv(t)
	f, _, _, _ := countingFactory("")
	root, err := newRootCmd(f)
	if err != nil {
		t.Fatal(err)
	}
	root.InitDefaultHelpCmd()
	var cmds []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	got := map[*cobra.Command]string{}
	for _, c := range cmds {
		got[c] = c.UsageString()
	}
	if u := got[root]; !strings.HasPrefix(u, "Usage:\n  tact [command]\n\nAvailable Commands:") {
		t.Errorf("root usage:\n%s", u)
	}
	// cobra's own usage, of a root and groups without RunE.
	root.RunE, root.Args = nil, nil
	for _, c := range cmds {
		if c.Annotations[annGroup] != "" {
			c.RunE = nil
		}
	}
	root.SetUsageTemplate("")
	for _, c := range cmds {
		want := c.UsageString()
		if groupedFlagUsages(c) != "" {
			// Flags by purpose (helpgroups.go): the same flag lines, grouped.
			oneSpace := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			gotLines := oneSpace(got[c])
			for _, line := range strings.Split(want, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "-") && !strings.Contains(gotLines, oneSpace(line)) {
					t.Errorf("%s: usage lacks %q:\n%s", c.CommandPath(), strings.TrimSpace(line), got[c])
				}
			}
			continue
		}
		if got[c] != want {
			t.Errorf("%s: usage\n%s\nwant\n%s", c.CommandPath(), got[c], want)
		}
	}
}

// run --help shows its flags by purpose, as gh's help does: a heading a
// group, in order, every flag once, --help last.
func TestRunHelpGrouped(t *testing.T) {
	factoryEnv(t)
	f, _, stdout, _ := countingFactory("")
	root, err := newRootCmd(f)
	if err != nil {
		t.Fatal(err)
	}
	root.SetArgs([]string{"run", "--help"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	help := stdout.String()
	last := -1
	for _, h := range []string{"INPUT AND OUTPUT", "WORKSPACE AND TOOLS", "MODEL", "SAMPLING", "MODEL SERVER (OPENAI BACKEND)",
		"EXECUTOR: BUDGETS AND STOPPING", "SAFETY: APPROVAL, POLICY, SANDBOX", "RUN HISTORY", "HELP", "Global Flags:"} {
		i := strings.Index(help, "\n"+h+"\n")
		if i < 0 || i < last {
			t.Errorf("heading %q missing or out of order:\n%s", h, help)
		}
		last = i
	}
	if strings.Contains(help, "\nFlags:\n") {
		t.Errorf("an ungrouped Flags: block:\n%s", help)
	}
	newRunCmd(f, nil).Flags().VisitAll(func(fl *pflag.Flag) {
		line := regexp.MustCompile(`(?m)^\s+(-\w, )?--` + regexp.QuoteMeta(fl.Name) + `( |\[|$)`)
		if n := len(line.FindAllString(help, -1)); n != 1 {
			t.Errorf("--%s shows %d times", fl.Name, n)
		}
	})
	for _, want := range []string{"--model string ", "--temperature float32", "--base-url URL", "--max-iterations int", "-y, --yes", "--resume RUN"} {
		if !strings.Contains(help, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
}

// tools, mcp list and the models commands parse into their options (runF
// sees them; nothing is opened).
func TestListingCommandOptions(t *testing.T) {
	factoryEnv(t)
	f, opens, _, _ := countingFactory("")
	var got []any
	check := func(cmd *cobra.Command, args ...string) {
		t.Helper()
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s %q: %v", cmd.Name(), args, err)
		}
	}
	check(newToolsCmd(f, func(_ context.Context, o *toolsOptions) error { got = append(got, o); return nil }), "--json", "--mcp-config", "m.json")
	mcpCmd := newMCPCmd(f, func(_ context.Context, o *mcpListOptions) error { got = append(got, o); return nil })
	check(mcpCmd, "list", "--json")
	check(newModelsListCmd(f, func(_ context.Context, o *modelsListOptions) error { got = append(got, o); return nil }), "--json")
	check(newModelsShowCmd(f, func(_ context.Context, o *modelsShowOptions) error { got = append(got, o); return nil }), "--json", "tiny")
	check(newModelsPullCmd(f, func(_ context.Context, o *modelsPullOptions) error { got = append(got, o); return nil }), "--force", "--name", "n", "x/y:Q8_0")
	check(newModelsCatalogCmd(f, func(_ context.Context, o *modelsCatalogOptions) error { got = append(got, o); return nil }), "--json")
	check(newModelsCacheListCmd(f, func(_ context.Context, o *modelsCacheListOptions) error { got = append(got, o); return nil }), "--json")
	check(newModelsCacheClearCmd(f, func(_ context.Context, o *modelsCacheClearOptions) error { got = append(got, o); return nil }))
	if len(got) != 8 || *opens != 0 {
		t.Fatalf("%d runs, %d opens", len(got), *opens)
	}
	if o := got[0].(*toolsOptions); !o.JSON || o.S != f.Settings || o.S.MCPConfig != "m.json" || o.IO != f.IO {
		t.Errorf("tools: %+v", o)
	}
	if o := got[1].(*mcpListOptions); !o.JSON || o.S != f.Settings {
		t.Errorf("mcp list: %+v", o)
	}
	if o := got[2].(*modelsListOptions); !o.JSON {
		t.Errorf("models list: %+v", o)
	}
	if o := got[3].(*modelsShowOptions); !o.JSON || !slices.Equal(o.Args, []string{"tiny"}) {
		t.Errorf("models show: %+v", o)
	}
	if o := got[4].(*modelsPullOptions); !o.Pull.Force || o.Pull.Name != "n" || o.Pull.StallTimeout <= 0 || !slices.Equal(o.Args, []string{"x/y:Q8_0"}) {
		t.Errorf("models pull: %+v", o)
	}
	if o := got[5].(*modelsCatalogOptions); !o.JSON {
		t.Errorf("models catalog: %+v", o)
	}
	if o := got[6].(*modelsCacheListOptions); !o.JSON {
		t.Errorf("models cache list: %+v", o)
	}
}

// tact tools lists what the runtime a run opens has: TACT_REDACT applies to
// its output as to a run's; a bad job-only setting does not stop it.
func TestToolsRedactSetting(t *testing.T) {
	factoryEnv(t)
	t.Setenv("TACT_REDACT", "final_an[a-z]+")
	t.Setenv("TACT_STOP_WHEN", "(")
	t.Setenv("TACT_WORKSPACE", "/nonexistent")
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	t.Setenv("TACT_TRACE", trace) // no job, no trace
	f, opens, stdout, _ := countingFactory("")
	root, err := newRootCmd(f)
	if err != nil {
		t.Fatal(err)
	}
	root.SetArgs([]string{"tools", "--json"})
	err = root.ExecuteContext(context.Background())
	if cerr := f.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	out := stdout.String()
	if *opens != 1 || strings.Contains(out, "final_answer") || !strings.Contains(out, `"name":"[REDACTED]"`) || !strings.Contains(out, `"name":"read_file"`) {
		t.Errorf("%d opens; stdout:\n%s", *opens, out)
	}
	if _, err := os.Stat(trace); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("trace: %v", err)
	}
}

// One function maps outcomes to exit codes.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err    error
		signal int
		want   int
	}{
		{nil, 0, 0},
		{errors.New("x"), 0, exitInternal},
		{badInputf("x"), 0, exitUsage},
		{&exitError{Code: 130, Err: errors.New("interrupted")}, 0, 130},
		{&exitError{Code: 130, Err: errors.New("interrupted")}, 143, 143},
		{&exitError{Code: 7, Err: errors.New("timeout")}, 143, 7},
	} {
		if got := exitCode(tc.err, tc.signal); got != tc.want {
			t.Errorf("exitCode(%v, %d) = %d, want %d", tc.err, tc.signal, got, tc.want)
		}
	}
}
