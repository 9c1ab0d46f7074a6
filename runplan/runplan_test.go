package runplan

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/tools"
)

// ok is a recorded tool run that succeeded.
func ok(tool, args, obs string) react.StepTrace {
	return react.StepTrace{Thought: "do " + tool, Action: react.ToolCall{Tool: tool, Args: json.RawMessage(args)}, Observation: obs, Source: "model"}
}

// numbered sets the trace's iterations as the executor does.
func numbered(steps ...react.StepTrace) []react.StepTrace {
	for i := range steps {
		steps[i].Iteration = i + 1
	}
	return steps
}

func TestBuildSelectsSuccessfulToolRuns(t *testing.T) {
	with := func(st react.StepTrace, f func(*react.StepTrace)) react.StepTrace { f(&st); return st }
	read := ok("read_file", `{"path":"a.txt"}`, "hello")
	cmd := ok("run_command", `{"command":"make"}`, "built")
	cases := []struct {
		name string
		step react.StepTrace
		why  string // "": kept
	}{
		{"read ok", read, ""},
		{"exec approved at the prompt", with(cmd, func(s *react.StepTrace) { s.Decision = "approved" }), ""},
		{"exec allowed by policy", with(cmd, func(s *react.StepTrace) { s.Decision = "allow" }), ""},
		{"exec approved always", with(cmd, func(s *react.StepTrace) { s.Decision = "approved_always" }), ""},
		{"exec approved by a PreToolUse hook", with(cmd, func(s *react.StepTrace) { s.Decision = "approved_by_hook" }), ""},
		{"mcp tool kept unchecked", ok("git.log", `{"n":3}`, "abc"), ""},
		{"failed exit", with(cmd, func(s *react.StepTrace) { s.ExitCode, s.Error = 2, "exit status 2" }), "failed with exit 2"},
		{"error without exit status", with(read, func(s *react.StepTrace) { s.Error = "open a.txt: no such file\nmore" }), "failed: open a.txt: no such file"},
		{"denied by policy", with(cmd, func(s *react.StepTrace) {
			s.Decision, s.ExitCode, s.Error = "deny", 1, "denied by policy: deny rule run_command(make)"
		}), "denied by policy: deny rule run_command(make)"},
		{"rejected by the user", with(cmd, func(s *react.StepTrace) {
			s.Decision, s.ExitCode, s.Error = "rejected", 1, "denied by user: rejected at the approval prompt"
		}), "denied by user: rejected at the approval prompt"},
		{"unknown decision", with(cmd, func(s *react.StepTrace) { s.Decision = "ask" }), "denied (ask)"},
		{"dry run", with(cmd, func(s *react.StepTrace) {
			s.Decision, s.Observation = "dry_run:allow", "[run_command] allowed by --yes"
		}), "not run (dry run)"},
		{"duplicate", with(read, func(s *react.StepTrace) { s.ExitCode, s.SkipReason = react.ExitCodeNotRun, react.SkipDuplicateAction }), "duplicate of an earlier step (skipped)"},
		{"not permitted", with(cmd, func(s *react.StepTrace) { s.ExitCode, s.SkipReason = react.ExitCodeNotRun, react.SkipToolNotPermitted }), "tool not permitted (skipped)"},
		{"invalid action", react.StepTrace{Action: react.ToolCall{Args: json.RawMessage(`{}`)}, Error: "reply is not JSON", ExitCode: react.ExitCodeNotRun, SkipReason: react.SkipInvalidAction},
			"invalid action: reply is not JSON"},
		{"planned step that could not be prepared", with(read, func(s *react.StepTrace) {
			s.ExitCode, s.SkipReason, s.Observation = react.ExitCodeNotRun, react.SkipInvalidAction, `argument "path": $jq .x produced no value`
		}), `invalid action: argument "path": $jq .x produced no value`},
		{"replan", react.StepTrace{Action: react.ToolCall{Tool: "replan", Args: json.RawMessage(`{"reason":"stuck"}`)}, ExitCode: react.ExitCodeNotRun, SkipReason: react.SkipReplanRequested},
			"replan requested"},
		{"stalled", with(read, func(s *react.StepTrace) {
			s.ExitCode, s.Error = react.ExitCodeNotRun, "not run: 3 identical actions in a row (stalled)"
		}), "not run: 3 identical actions in a row (stalled)"},
		{"interrupted", with(cmd, func(s *react.StepTrace) { s.Observation, s.Error = "interrupted", "context canceled" }), "interrupted"},
		{"args not an object", ok("read_file", `["a.txt"]`, "x"), "arguments are not a JSON object"},
		{"args failing the schema", ok("read_file", `{"path":5}`, "x"), "arguments for read_file"},
		{"failed final answer", with(ok("final_answer", `{"answer":"x"}`, "x"), func(s *react.StepTrace) {
			s.ExitCode, s.Error = react.ExitCodeNotRun, "not run: 3 identical actions in a row (stalled)"
		}), "not run: 3 identical actions in a row (stalled)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, omitted, err := Build("q", numbered(c.step), Options{})
			if err != nil {
				t.Fatal(err)
			}
			last := p.Steps[len(p.Steps)-1]
			if last.Tool != tools.FinalAnswer {
				t.Fatalf("last step is %s, want final_answer", last.Tool)
			}
			if c.why == "" {
				if len(omitted) != 0 || len(p.Steps) != 2 {
					t.Fatalf("want the step kept, got %d steps, omitted %v", len(p.Steps), omitted)
				}
				if got := p.Steps[0]; got.Tool != c.step.Action.Tool || got.Thought != c.step.Thought {
					t.Fatalf("kept step = %+v", got)
				}
				return
			}
			if len(p.Steps) != 1 || len(omitted) != 1 {
				t.Fatalf("want the step left out, got %d steps, omitted %v", len(p.Steps), omitted)
			}
			o := omitted[0]
			if o.Iteration != 1 || o.Tool != c.step.Action.Tool || !strings.HasPrefix(o.Why, c.why) {
				t.Fatalf("omitted = %+v, want why %q", o, c.why)
			}
		})
	}
}

func TestBuildDropsTheRunsFinalAnswer(t *testing.T) {
	steps := numbered(ok("read_file", `{"path":"a"}`, "x"), ok("final_answer", `{"answer":"x"}`, "x"))
	p, omitted, err := Build("q", steps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(omitted) != 0 || len(p.Steps) != 2 || string(p.Steps[1].Args["answer"]) != `""` {
		t.Fatalf("steps %+v, omitted %v", p.Steps, omitted)
	}
}

func TestOmittedString(t *testing.T) {
	for _, c := range []struct {
		o    Omitted
		want string
	}{
		{Omitted{3, "run_command", "failed with exit 2"}, "step 3 (run_command) left out: failed with exit 2"},
		{Omitted{4, "", "invalid action: reply is not JSON"}, "step 4 left out: invalid action: reply is not JSON"},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestBuildReferencesEarlierOutputs(t *testing.T) {
	const cut = "head\n[... lines 2-40 cut (900 bytes, about 225 tokens) ...]\nnotes/a.txt\n"
	cases := []struct {
		name  string
		steps []react.StepTrace
		// want is the last kept step's args as written to the plan.
		want string
	}{
		{"whole output", []react.StepTrace{ok("run_command", `{"command":"pwd"}`, "notes/a.txt"), ok("read_file", `{"path":"notes/a.txt"}`, "A")},
			`{"path":{"$jq":".steps[0].output"}}`},
		{"trailing newline", []react.StepTrace{ok("run_command", `{"command":"pwd"}`, "notes/a.txt\n"), ok("read_file", `{"path":"notes/a.txt"}`, "A")},
			`{"path":{"$jq":".steps[0].output | rtrimstr(\"\\n\")"}}`},
		{"a line", []react.StepTrace{ok("list_files", `{"path":"notes"}`, "notes/a.txt\nnotes/b.txt\n"), ok("read_file", `{"path":"notes/b.txt"}`, "B")},
			`{"path":{"$jq":".steps[0].output | split(\"\\n\") | .[1]"}}`},
		{"most recent wins", []react.StepTrace{
			ok("list_files", `{"path":"notes"}`, "notes/a.txt\nnotes/b.txt"),
			ok("search_files", `{"pattern":"b"}`, "x\nnotes/b.txt"),
			ok("read_file", `{"path":"notes/b.txt"}`, "B")},
			`{"path":{"$jq":".steps[1].output | split(\"\\n\") | .[1]"}}`},
		{"index among kept steps", []react.StepTrace{
			ok("list_files", `{"path":"."}`, "old"),
			{Action: react.ToolCall{Tool: "run_command", Args: json.RawMessage(`{"command":"false"}`)}, ExitCode: 1, Error: "exit status 1"},
			ok("list_files", `{"path":"notes"}`, "notes/b.txt"),
			ok("read_file", `{"path":"notes/b.txt"}`, "B")},
			`{"path":{"$jq":".steps[1].output"}}`},
		{"short value not matched", []react.StepTrace{ok("run_command", `{"command":"pwd"}`, "a\nb"), ok("search_files", `{"pattern":"b","path":"src"}`, "")},
			`{"path":"src","pattern":"b"}`},
		{"blank value not matched", []react.StepTrace{ok("run_command", `{"command":"pwd"}`, "x\n   \ny"), ok("write_file", `{"path":"src/z","content":"   "}`, "ok")},
			`{"content":"   ","path":"src/z"}`},
		{"empty value kept literal", []react.StepTrace{ok("run_command", `{"command":"pwd"}`, "\n"), ok("search_files", `{"pattern":"TODO","path":""}`, "")},
			`{"path":{"$jq":"\"\""},"pattern":"TODO"}`},
		{"cut observation not matched", []react.StepTrace{ok("run_command", `{"command":"find"}`, cut), ok("read_file", `{"path":"notes/a.txt"}`, "A")},
			`{"path":"notes/a.txt"}`},
		{"redacted observation not matched", []react.StepTrace{ok("run_command", `{"command":"env"}`, "TOKEN=[REDACTED]\nnotes/a.txt"), ok("read_file", `{"path":"notes/a.txt"}`, "A")},
			`{"path":"notes/a.txt"}`},
		{"omitted step's output not matched", []react.StepTrace{
			{Action: react.ToolCall{Tool: "run_command", Args: json.RawMessage(`{"command":"ls"}`)}, Observation: "notes/a.txt", ExitCode: 2, Error: "exit status 2"},
			ok("read_file", `{"path":"notes/a.txt"}`, "A")},
			`{"path":"notes/a.txt"}`},
		{"own output not matched", []react.StepTrace{ok("read_file", `{"path":"notes/a.txt"}`, "notes/a.txt")},
			`{"path":"notes/a.txt"}`},
		{"non-string values kept", []react.StepTrace{ok("run_command", `{"command":"pwd"}`, "3"), ok("read_file", `{"path":"x.txt","offset":3}`, "A")},
			`{"offset":3,"path":"x.txt"}`},
		{"value shaped like a $jq argument kept literal", []react.StepTrace{ok("git.put", `{"doc":{"$jq":".x"}}`, "ok")},
			`{"doc":{"$jq":"{\"$jq\":\".x\"}"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _, err := Build("q", numbered(c.steps...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(p.Steps[len(p.Steps)-2].Args)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("args = %s\nwant   %s", got, c.want)
			}
		})
	}
}

// TestEscapedLiteralsYieldThemselves: a literal that would read as a fill
// ("") or a $jq argument is written as a $jq expression yielding it.
func TestEscapedLiteralsYieldThemselves(t *testing.T) {
	for _, v := range []string{`""`, `{"$jq":".x"}`, `{"$jq": "a <b> & \u00e9 \"q\"\n"}`} {
		arg := keepLiteral(json.RawMessage(v))
		kind, expr := planner.ClassifyArg(arg)
		if kind != planner.ArgJQ {
			t.Fatalf("%s: written as %s, not a $jq argument", v, arg)
		}
		out, err := jqx.Eval(context.Background(), jqx.Request{Expr: expr, Input: json.RawMessage(`null`), MaxResults: 1})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		var want, got any
		_ = json.Unmarshal([]byte(v), &want)
		_ = json.Unmarshal(out.Results[0], &got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s yields %s", v, out.Results[0])
		}
	}
}

func TestBuildAnswer(t *testing.T) {
	cases := []struct {
		name, jq, want, err string
	}{
		{"filled by a model", "", `""`, ""},
		{"computed", ".steps[-1].output", `{"$jq":".steps[-1].output"}`, ""},
		{"does not compile", ".steps[", "", `final answer: argument "answer": invalid $jq expression`},
		{"unknown function", "nosuchfn(1)", "", `final answer: argument "answer": invalid $jq expression`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _, err := Build("q", nil, Options{AnswerJQ: c.jq})
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q...", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) != 1 || p.Steps[0].Tool != tools.FinalAnswer || string(p.Steps[0].Args["answer"]) != c.want {
				t.Fatalf("steps = %+v", p.Steps)
			}
		})
	}
}

func TestBuildRoundTrip(t *testing.T) {
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	steps := numbered(
		ok("run_command", `{"command":"ls notes","working_dir":"."}`, "a.txt\nb <&> c.txt\n"),
		react.StepTrace{Action: react.ToolCall{Tool: "run_command", Args: json.RawMessage(`{"command":"false"}`)}, ExitCode: 1, Error: "exit status 1"},
		ok("read_file", `{"path":"b <&> c.txt","offset":2,"limit":10}`, "B"),
		ok("search_files", `{"pattern":"x<&>","path":""}`, ""),
		ok("final_answer", `{"answer":"B"}`, "B"),
	)
	for _, answer := range []string{"", ".steps[-1].output"} {
		p, omitted, err := Build("why?", steps, Options{RunID: "r-42", AnswerJQ: answer, Created: created})
		if err != nil {
			t.Fatal(err)
		}
		if len(omitted) != 1 || omitted[0].Iteration != 2 {
			t.Fatalf("omitted = %v", omitted)
		}
		var buf bytes.Buffer
		if err := p.WriteJSONL(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := planner.Parse(bytes.NewReader(buf.Bytes()), "plan.jsonl", tools.DefaultRegistry())
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		h := back.Header
		if h == nil || h.Query != "why?" || !h.Created.Equal(created) || h.Planner["from_run"] != "r-42" {
			t.Fatalf("header = %+v", h)
		}
		if len(back.Steps) != len(p.Steps) {
			t.Fatalf("%d steps back, wrote %d", len(back.Steps), len(p.Steps))
		}
		for i, s := range back.Steps {
			w := p.Steps[i]
			if s.Tool != w.Tool || s.Thought != w.Thought || !sameJSON(t, s.Args, w.Args) {
				t.Fatalf("step %d back = %+v, wrote %+v", i+1, s, w)
			}
		}
		if want := `{"$jq":".steps[0].output | split(\"\\n\") | .[1]"}`; !sameJSON(t, back.Steps[1].Args["path"], json.RawMessage(want)) {
			t.Fatalf("read_file path = %s, want %s", back.Steps[1].Args["path"], want)
		}
		if !strings.Contains(buf.String(), `"x<&>"`) {
			t.Fatalf("HTML characters escaped in\n%s", buf.String())
		}
	}
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// plan --from never makes a command, a working directory or a written
// path out of an earlier output (issue 36 item 2): a run that read
// TODO.txt and then ran a line of it would otherwise be saved as "run
// whatever TODO.txt says". Data arguments are linked; Options.LinkOutputs
// links everything, as asked.
func TestBuildNeverLinksCommands(t *testing.T) {
	todo := ok("read_file", `{"path":"TODO.txt"}`, "ls -la\nsrc\nout/a.txt\nhello world\n")
	cases := []struct {
		name       string
		step       react.StepTrace
		want, link string // the step's args as written, without and with LinkOutputs
	}{
		{"command", ok("run_command", `{"command":"ls -la"}`, "x"),
			`{"command":"ls -la"}`, `{"command":{"$jq":".steps[0].output | split(\"\\n\") | .[0]"}}`},
		{"working dir", ok("run_command", `{"command":"make","working_dir":"src"}`, "x"),
			`{"command":"make","working_dir":"src"}`, `{"command":"make","working_dir":{"$jq":".steps[0].output | split(\"\\n\") | .[1]"}}`},
		{"written path, data content", ok("write_file", `{"path":"out/a.txt","content":"hello world"}`, "ok"),
			`{"content":{"$jq":".steps[0].output | split(\"\\n\") | .[3]"},"path":"out/a.txt"}`,
			`{"content":{"$jq":".steps[0].output | split(\"\\n\") | .[3]"},"path":{"$jq":".steps[0].output | split(\"\\n\") | .[2]"}}`},
		{"edited path", ok("edit_file", `{"path":"out/a.txt","old_string":"x","new_string":"hello world"}`, "ok"),
			`{"new_string":{"$jq":".steps[0].output | split(\"\\n\") | .[3]"},"old_string":"x","path":"out/a.txt"}`,
			`{"new_string":{"$jq":".steps[0].output | split(\"\\n\") | .[3]"},"old_string":"x","path":{"$jq":".steps[0].output | split(\"\\n\") | .[2]"}}`},
		{"an MCP tool's arguments", ok("shell.run", `{"cmd":"ls -la"}`, "x"),
			`{"cmd":"ls -la"}`, `{"cmd":{"$jq":".steps[0].output | split(\"\\n\") | .[0]"}}`},
		{"a read's path is data", ok("read_file", `{"path":"out/a.txt"}`, "x"),
			`{"path":{"$jq":".steps[0].output | split(\"\\n\") | .[2]"}}`, `{"path":{"$jq":".steps[0].output | split(\"\\n\") | .[2]"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, link := range []bool{false, true} {
				p, _, err := Build("q", numbered(todo, c.step), Options{LinkOutputs: link})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := json.Marshal(p.Steps[1].Args)
				want := c.want
				if link {
					want = c.link
				}
				if string(got) != want {
					t.Errorf("LinkOutputs %v: args = %s\nwant %s", link, got, want)
				}
			}
		})
	}
}
