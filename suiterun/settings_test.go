package suiterun

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/testsuite"
)

// A case's flags land in the settings the runtime (approvals, policy,
// sandbox) or the job (allow-list, budgets, schema, timeout) takes; a
// live trial after the first varies the seed, a replay's does not.
func TestCaseFlags(t *testing.T) {
	base := config.Defaults()
	base.Seed, base.Timeout, base.JSON = 7, time.Minute, true
	n := 4
	var seed int64 = 100
	f := testsuite.Flags{AllowTools: []string{"read_file"}, NoPlan: true, Yes: true, NoAsk: true, MaxIterations: &n,
		Timeout: testsuite.Duration(2 * time.Second), Schema: json.RawMessage(`{"type":"string"}`), Policy: "/p.json",
		Env: []string{"A=1"}, Seed: &seed}
	rs := runtimeSettings(base, f)
	if !rs.Yes || !rs.NoAsk || rs.Policy != "/p.json" || len(rs.Env) != 1 || !rs.NoInput || rs.JSON {
		t.Errorf("runtime settings: %+v", rs)
	}
	if runtimeKey(rs) == runtimeKey(runtimeSettings(base, testsuite.Flags{})) {
		t.Error("a case with its own policy shares the runtime of one without")
	}
	if runtimeKey(runtimeSettings(base, testsuite.Flags{NoPlan: true})) != runtimeKey(runtimeSettings(base, testsuite.Flags{})) {
		t.Error("job flags split the runtime")
	}
	js := jobSettings(rs, f, 3, true)
	if len(js.AllowTools) != 1 || !js.NoPlan || js.MaxIterations != 4 || js.Timeout != 2*time.Second || js.Schema != `{"type":"string"}` || js.Seed != 102 {
		t.Errorf("job settings: allow %v no_plan %v max %d timeout %s schema %q seed %d", js.AllowTools, js.NoPlan, js.MaxIterations, js.Timeout, js.Schema, js.Seed)
	}
	if js := jobSettings(rs, testsuite.Flags{}, 3, false); js.Seed != 7 || js.Timeout != time.Minute {
		t.Errorf("a replay's trial: seed %d timeout %s", js.Seed, js.Timeout)
	}
	random := *base
	random.Seed = -1
	if js := jobSettings(&random, testsuite.Flags{}, 5, true); js.Seed != -1 {
		t.Errorf("a random seed became %d", js.Seed)
	}
	if base.Yes || base.Policy != "" || base.AllowTools != nil {
		t.Error("the command's settings changed")
	}
}
