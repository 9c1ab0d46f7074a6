package suiterun

import (
	"context"
	"testing"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/agent/agenttest"
)

// Live on the script backend, each of k trials gets the script from its
// start (it holds one run's replies): all k pass, each with the tokens of
// one run, where a shared script left the later trials with no reply.
func TestLiveScriptTrials(t *testing.T) {
	const script = `{"kind":"plan","text":"{\"plan\":[{\"thought\":\"Answer at once from what is known.\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"\"}}]}"}` + "\n" +
		`{"kind":"fill","text":"{\"answer\":\"done\"}"}` + "\n"
	s := agenttest.Settings(t, script)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cases.jsonl": `{"name":"a","query":"answer","assert":[{"jq":".final_answer == \"done\""}]}` + "\n",
	})
	res, err := Run(context.Background(), loadSuite(t, dir), Options{Settings: s, Open: agent.Open, Live: true, Trials: 4, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d results, want 4", len(res))
	}
	for _, r := range res {
		if !r.Passed() {
			t.Errorf("trial %d: %+v", r.Trial, r)
		}
		if r.Usage != res[0].Usage {
			t.Errorf("trial %d used %+v, trial 1 %+v", r.Trial, r.Usage, res[0].Usage)
		}
	}
}
