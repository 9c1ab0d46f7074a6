package main

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
)

// A flag overrides its variable (and silences the variable's error) only if
// the setting's flag tag names it: every flag of run, plan and exec must be
// the flag of exactly one config.Settings field.
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
	s := &config.Settings{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(fs, s, modeRun)
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := byFlag[f.Name]; !ok {
			t.Errorf("flag --%s has no config.Settings field with flag:%q", f.Name, f.Name)
		}
	})
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
