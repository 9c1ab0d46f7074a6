package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/schema/schematest"
)

// The official JSON-Schema-Test-Suite's draft 2020-12 required cases
// (schema/testdata/JSON-Schema-Test-Suite; its README lists what is left
// out and why) through `tact exec --schema SCHEMA PLAN`, in process: the
// command line, settings, runtime, plan check, run and exit code as
// tactMain has them, without a process per case. Each case's data is the
// answer twice:
//
//   - a saved plan's literal answer, checked when the plan is read: valid
//     data exits 0 with the value on stdout, invalid data exits 2 naming
//     PLAN:1 and the failing location under /answer;
//   - a $jq answer ({"$jq": DATA}), checked when the run ends: valid
//     exits 0 with the value, invalid exits 11 (invalid_answer) naming
//     the location.
//
// Data a plan cannot hold as a literal ("" means fill from context, a
// lone {"$jq": ...} or {"$param": ...} is a directive) is given as $jq
// only. cmd/tact/testdata/script/jsonschema_suite.txtar runs a few
// through the real binary.
func TestJSONSchemaSuite(t *testing.T) {
	dir := factoryEnv(t)
	cases, err := schematest.Suite("../../schema/testdata/JSON-Schema-Test-Suite", "tests/draft2020-12", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 1250 {
		t.Fatalf("%d cases, want 1250 (the kept files changed?)", len(cases))
	}
	plan := filepath.Join(dir, "plan.jsonl")
	run := func(answer json.RawMessage, sch json.RawMessage) (int, string, string) {
		row := append(append([]byte(`{"tool":"final_answer","args":{"answer":`), answer...), "}}\n"...)
		// A new file each time: truncating one costs milliseconds here.
		os.Remove(plan)
		if err := os.WriteFile(plan, row, 0o644); err != nil {
			t.Fatal(err)
		}
		return tactInProcess("exec", "--workspace", dir, "--backend", "none", "--no-history", "--schema", string(sch), plan)
	}
	literals, failed := 0, 0
	fail := func(c schematest.SuiteCase, how, format string, a ...any) {
		failed++
		if failed <= 20 {
			t.Errorf("%s (%s, valid=%v): %s", c.Name(), how, c.Valid, fmt.Sprintf(format, a...))
		}
	}
	for _, c := range cases {
		c.Data = json.RawMessage(compact(t, c.Data)) // a plan row is one line
		if kind, _ := planner.ClassifyArg(c.Data); kind == planner.ArgLiteral {
			literals++
			code, stdout, stderr := run(c.Data, c.Schema)
			switch {
			case c.Valid && (code != 0 || !sameJSON(stdout, string(c.Data))):
				fail(c, "literal", "exit %d, stdout %q, stderr %q", code, stdout, stderr)
			case !c.Valid && (code != 2 || !strings.HasPrefix(stderr, "tact: "+plan+":1: arguments for final_answer: at /answer")):
				fail(c, "literal", "exit %d, stderr %q", code, stderr)
			}
		}
		jq, _ := json.Marshal(map[string]string{"$jq": string(c.Data)})
		code, stdout, stderr := run(jq, c.Schema)
		switch {
		case c.Valid && (code != 0 || !sameJSON(stdout, string(c.Data))):
			fail(c, "$jq", "exit %d, stdout %q, stderr %q", code, stdout, stderr)
		case !c.Valid && (code != 11 || !strings.Contains(stderr, "the final answer does not validate against the answer schema: at /")):
			fail(c, "$jq", "exit %d, stderr %q", code, stderr)
		}
	}
	t.Logf("%d cases (%d also as a literal answer), %d failed", len(cases), literals, failed)
}

// tactInProcess runs tact's command line as tactMain does, in this
// process, and returns the exit code, stdout and stderr.
func tactInProcess(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	f := newFactory(&iostreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root, err := newRootCmd(f)
	if err == nil {
		root.SetArgs(args)
		err = root.ExecuteContext(context.Background())
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = cerr
	}
	code = exitCode(err, 0)
	if msg := errorMessage(err); msg != "" {
		fmt.Fprintln(f.IO.ErrOut, "tact: "+termLine(msg))
	}
	return code, out.String(), errOut.String()
}

func compact(t *testing.T, b []byte) string {
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatal(err)
	}
	return c.String()
}

// sameJSON: a and b are one JSON value each, equal as JSON (1.0 is 1).
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
