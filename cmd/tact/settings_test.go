package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
)

// A flag overrides its variable (and silences the variable's error) only if
// the setting's flag tag names it: every flag of run, plan, exec, batch and
// serve (but batch's --ordered, run's and exec's --resume and --continue)
// must be the flag of exactly one
// config.Settings field.
func TestRunFlagsHaveSettingTags(t *testing.T) {
	byFlag := map[string]string{}
	for _, f := range config.Fields() {
		if name := config.Flag(f); name != "" {
			if other, dup := byFlag[name]; dup {
				t.Errorf("flag --%s tagged on %s and %s", name, other, f)
			}
			byFlag[name] = f
		}
	}
	// Flags that name this invocation's input, not a setting: no variable.
	perInvocation := map[string]bool{"batch --ordered": true, "run --resume": true, "run --continue": true, "exec --resume": true, "plan --from": true, "plan --answer-jq": true, "run --file": true, "exec --file": true, "plan --file": true, "plan --param-name": true, "batch --plan": true, "plan --link-outputs": true}
	f := newFactory(&iostreams{})
	for _, cmd := range []*cobra.Command{newRunCmd(f, nil), newPlanCmd(f, nil), newExecCmd(f, nil), newBatchCmd(f, nil), newServeCmd(f, nil)} {
		if cmd.Annotations[annSettings] == "" {
			t.Errorf("%s: not marked with annSettings", cmd.Name())
		}
		cmd.Flags().VisitAll(func(fl *pflag.Flag) {
			if _, ok := byFlag[fl.Name]; !ok && !perInvocation[cmd.Name()+" --"+fl.Name] {
				t.Errorf("%s: flag --%s has no config.Settings field with flag:%q", cmd.Name(), fl.Name, fl.Name)
			}
		})
	}
}

// The CLI's 0 for --top-k and --min-p means off; the backend reads a zero
// field as "its default" and a negative one as off.
func TestSamplingOf(t *testing.T) {
	s := config.Defaults()
	if sm := agent.Sampling(s); sm.TopK != 40 || sm.MinP != 0.05 || sm.TopP != 0.95 || sm.Temperature != 0.2 || sm.Seed != -1 {
		t.Fatalf("defaults %+v", sm)
	}
	s.TopK, s.MinP = 0, 0
	if sm := agent.Sampling(s); sm.TopK != -1 || sm.MinP != -1 {
		t.Fatalf("off %+v", sm)
	}
}

// --flash-attention alone means on (as the boolean flag it was); a value
// needs "=", so the query after a bare flag stays the query.
func TestFlashAttentionFlag(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want       string
		positional int
	}{
		{nil, "auto", 0},
		{[]string{"--flash-attention", "why is the disk full?"}, "on", 1},
		{[]string{"--flash-attention=off"}, "off", 0},
	} {
		s := &config.Settings{FlashAttn: "auto"}
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		addModelFlags(fs, s)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if s.FlashAttn != tc.want || fs.NArg() != tc.positional {
			t.Errorf("%v: FlashAttn %q, %d arguments; want %q, %d", tc.args, s.FlashAttn, fs.NArg(), tc.want, tc.positional)
		}
	}
}
