package mcpserve

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/testwait"
	"github.com/tactcli/tact/react"
)

// byHand is a client that handles the rounds itself: it declares
// elicitation (a handler the SDK never calls, the retries being the
// test's) with the multi round-trip middleware off.
func byHand(t *testing.T) *sdk.ClientOptions {
	return &sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Error("the SDK fulfilled an input request itself")
			return &sdk.ElicitResult{Action: "cancel"}, nil
		}}
}

// modernVersion is the protocol of multi round-trip requests.
const modernVersion = "2026-07-28"

// scriptLines writes a script of raw JSONL entries.
func scriptLines(t *testing.T, dir string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// action is a script entry whose prompt must hold expect (when given).
func action(t *testing.T, text string, expect ...string) string {
	t.Helper()
	e := map[string]any{"kind": "action", "text": text}
	if len(expect) > 0 {
		e["expect"] = expect
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pauseFixture is a server on the script backend that records runs in a
// fresh state directory.
func pauseFixture(t *testing.T, edit func(s *config.Settings), lines ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	script := scriptLines(t, dir, lines...)
	return newFixture(t, func(s *config.Settings) {
		s.Backend, s.Script, s.History, s.NoPlan = "script", script, true, true
		if edit != nil {
			edit(s)
		}
	})
}

// records are the run history's runs, newest first, once n of them
// have ended (the record's end is written after the call's answer).
func records(t *testing.T, n int) []history.Record {
	t.Helper()
	var recs []history.Record
	testwait.Until(time.Minute, func() bool {
		recs = listRecords(t)
		ended := 0
		for _, r := range recs {
			if r.Ended {
				ended++
			}
		}
		return ended >= n
	})
	return recs
}

func listRecords(t *testing.T) []history.Record {
	t.Helper()
	p, err := history.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	st, err := history.Open(p, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.List(context.Background(), history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// askScript: a side effect (a counter line), then ask_user with options
// and a secret in the question, then the answer the model's prompt must
// hold.
func askScript(t *testing.T) []string {
	return []string{
		action(t, `{"thought":"count a side effect first","tool":"run_command","args":{"command":"sh -c 'echo x >> counter.txt'"}}`),
		action(t, `{"thought":"ask the user which one","tool":"ask_user","args":{"question":"Which config is live? (token `+testSecret+`)","options":["the red one","the blue one"]}}`),
		action(t, `{"thought":"the user said blue","tool":"final_answer","args":{"answer":"blue is live"}}`, "the blue one"),
	}
}

// TestModernClientAnswersByRetrying: on 2026-07-28 a tact_run whose model
// calls ask_user ends with an input-required result (no content, the run
// id sealed in the request state, the question redacted); the SDK
// client's retry with the answer continues the paused run from its
// checkpoint (the side effect before the pause does not run again) and
// the run history links the answering run to the paused one.
func TestModernClientAnswersByRetrying(t *testing.T) {
	f := pauseFixture(t, func(s *config.Settings) { s.Yes = true }, askScript(t)...)
	var asked []string
	cs := f.connectAt(&sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		raw, _ := json.Marshal(req.Params)
		asked = append(asked, string(raw))
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "the blue one"}}, nil
	}}, modernVersion)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "which config is live?"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || resultText(res) != "blue is live" {
		t.Fatalf("tact_run: %q isError %v", resultText(res), res.IsError)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "Which config is live? (token [REDACTED])") || strings.Contains(asked[0], testSecret) ||
		!strings.Contains(asked[0], `"enum":["the red one","the blue one"]`) {
		t.Errorf("elicited %q, want the question once, redacted, with its options", asked)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(string(raw), testSecret) {
		t.Errorf("structured content holds the secret: %s", raw)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, "counter.txt")); string(data) != "x\n" {
		t.Errorf("counter.txt %q: the step before the pause ran again", data)
	}
	recs := records(t, 2)
	if len(recs) != 2 || recs[1].Reason != "needs_input" || recs[0].ResumedFrom != recs[1].ID || recs[0].Reason != "success" {
		t.Fatalf("records %+v, want the paused run and the run answering it", recs)
	}
	for _, r := range recs {
		if strings.Contains(r.Result, testSecret) || strings.Contains(r.Query, testSecret) {
			t.Errorf("record %s holds the secret", r.ID)
		}
	}
}

// TestInputRequiredResultByHand: a client that handles the rounds itself
// sees the input-required result; a changed request state is refused; a
// retry without the answer is asked again; the retry with it finishes the
// run; answering it again is refused.
func TestInputRequiredResultByHand(t *testing.T) {
	f := pauseFixture(t, func(s *config.Settings) { s.Yes = true }, askScript(t)...)
	cs := f.connectAt(byHand(t), modernVersion)
	ctx := context.Background()
	first := &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "which config is live?"}}
	res, err := cs.CallTool(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" || len(res.Content) != 0 {
		t.Fatalf("want an input-required result, got %+v", res)
	}
	ir, ok := res.InputRequests["answer"].(*sdk.ElicitParams)
	if !ok || strings.Contains(ir.Message, testSecret) || !strings.Contains(ir.Message, "[REDACTED]") {
		t.Fatalf("input request %+v", res.InputRequests["answer"])
	}
	state := res.RequestState
	answer := sdk.InputResponseMap{"answer": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "the blue one"}}}
	retry := func(state string, responses sdk.InputResponseMap) (*sdk.CallToolResult, error) {
		p := *first
		p.RequestState, p.InputResponses = state, responses
		return cs.CallTool(ctx, &p)
	}
	// A changed state: a protocol error, the run stays paused.
	b64, sig, _ := strings.Cut(state, ".")
	if _, err := retry(b64+"x."+sig, answer); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Errorf("changed state: %v, want it refused", err)
	}
	// No answer: asked again, the same run.
	again, err := retry(state, nil)
	if err != nil || !again.NeedsInput() || again.RequestState != state {
		t.Fatalf("retry without the answer: %+v %v, want the question again", again, err)
	}
	// An answer that is not an option: the run stays paused.
	bad := sdk.InputResponseMap{"answer": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "the green one"}}}
	if res, err := retry(state, bad); err != nil || !res.IsError || !strings.Contains(resultText(res), "must be one of") {
		t.Fatalf("a wrong answer: %v %v", res, err)
	}
	done, err := retry(state, answer)
	if err != nil || done.IsError || resultText(done) != "blue is live" {
		t.Fatalf("retry with the answer: %+v %v", done, err)
	}
	// Answered: a second retry is refused, and nothing runs again.
	twice, err := retry(state, answer)
	if err != nil || !twice.IsError || !strings.Contains(resultText(twice), "was answered already") {
		t.Fatalf("second retry: %v %v", twice, err)
	}
}

// TestModernApprovalPauses: on 2026-07-28 a run's write that only a
// person may approve pauses the run; the retry's "no" denies it (the
// denial is the observation), and a direct write_file call is asked the
// same way, "yes" making it.
func TestModernApprovalPauses(t *testing.T) {
	f := pauseFixture(t, nil,
		action(t, `{"thought":"write the note file","tool":"write_file","args":{"path":"note.txt","content":"hi"}}`),
		action(t, `{"thought":"it was denied, say so","tool":"final_answer","args":{"answer":"not written"}}`, "denied by user: tact answer --deny"))
	var kinds []string
	cs := f.connectAt(&sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		kinds = append(kinds, req.Params.Message)
		if strings.Contains(req.Params.Message, "tact run") {
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
	}}, modernVersion)
	text, isErr := call(t, cs, "tact_run", map[string]any{"query": "write a note"})
	if isErr || text != "not written" {
		t.Fatalf("tact_run: %q isError %v", text, isErr)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "note.txt")); err == nil {
		t.Fatal("note.txt was written though the approval was declined")
	}
	text, isErr = call(t, cs, "write_file", map[string]any{"path": "direct.txt", "content": "ok"})
	if isErr {
		t.Fatalf("write_file approved: %q", text)
	}
	if data, err := os.ReadFile(filepath.Join(f.ws, "direct.txt")); err != nil || string(data) != "ok" {
		t.Fatalf("direct.txt: %q %v", data, err)
	}
	if len(kinds) != 2 || !strings.Contains(kinds[0], "Run this?") || !strings.Contains(kinds[1], "direct.txt") {
		t.Errorf("asked %q, want the run's approval then the call's", kinds)
	}
}

// TestLegacyClientIsElicited: a 2025-11-25 client is asked ask_user's
// question by elicitation while the call waits; the run never pauses.
func TestLegacyClientIsElicited(t *testing.T) {
	f := pauseFixture(t, func(s *config.Settings) { s.Yes = true }, askScript(t)...)
	asked := 0
	cs := f.connect(&sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked++
		if strings.Contains(req.Params.Message, testSecret) {
			t.Errorf("elicited the secret: %q", req.Params.Message)
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "the blue one"}}, nil
	}})
	text, isErr := call(t, cs, "tact_run", map[string]any{"query": "which config is live?"})
	if isErr || text != "blue is live" || asked != 1 {
		t.Fatalf("tact_run: %q isError %v, asked %d", text, isErr, asked)
	}
	if recs := records(t, 1); len(recs) != 1 || recs[0].Reason != "success" {
		t.Errorf("records %+v, want one run that never paused", recs)
	}
}

// TestModernSessionsDoNotWait: session A's paused run (its question not
// answered) holds up nothing: session B's run pauses and is answered,
// then A's is, each with its own state, over stateless HTTP.
func TestModernSessionsDoNotWait(t *testing.T) {
	f := pauseFixture(t, func(s *config.Settings) { s.Yes = true },
		action(t, `{"thought":"ask the user for a name","tool":"ask_user","args":{"question":"Name A?"}}`),
		action(t, `{"thought":"ask the user for a name","tool":"ask_user","args":{"question":"Name B?"}}`),
		action(t, `{"thought":"the user named it","tool":"final_answer","args":{"answer":"B done"}}`, "bee"),
		action(t, `{"thought":"the user named it","tool":"final_answer","args":{"answer":"A done"}}`, "ay"))
	hs := httptest.NewServer(f.srv.Handler(HTTPOptions{}))
	defer hs.Close()
	open := func() *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, byHand(t)).
			Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != modernVersion {
			t.Fatalf("protocol %s over HTTP, want %s", v, modernVersion)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := open(), open()
	ctx := context.Background()
	ask := func(cs *sdk.ClientSession, p *sdk.CallToolParams) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	pa := &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "name a"}}
	ra := ask(a, pa)
	if !ra.NeedsInput() {
		t.Fatalf("A: %+v, want input required", ra)
	}
	pb := &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "name b"}}
	rb := ask(b, pb)
	if !rb.NeedsInput() || rb.RequestState == ra.RequestState {
		t.Fatalf("B: %+v, want its own question", rb)
	}
	reply := func(text string) sdk.InputResponseMap {
		return sdk.InputResponseMap{"answer": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": text}}}
	}
	pb.RequestState, pb.InputResponses = rb.RequestState, reply("bee")
	if res := ask(b, pb); res.IsError || resultText(res) != "B done" {
		t.Fatalf("B answered: %q isError %v", resultText(res), res.IsError)
	}
	pa.RequestState, pa.InputResponses = ra.RequestState, reply("ay")
	if res := ask(a, pa); res.IsError || resultText(res) != "A done" {
		t.Fatalf("A answered: %q isError %v", resultText(res), res.IsError)
	}
}

// TestRunOutputSchema: with --schema, tact_run declares an outputSchema
// (the result object, final_answer the answer's schema, its definitions
// at the root); the structured content keeps the result's field order;
// tools are listed in one fixed order (by name).
func TestRunOutputSchema(t *testing.T) {
	dir := t.TempDir()
	script := scriptFile(t, dir, `{"thought":"the count is known already","tool":"final_answer","args":{"answer":{"count":2}}}`)
	f := newFixture(t, func(s *config.Settings) {
		s.Backend, s.Script, s.NoPlan = "script", script, true
		s.Schema = `{"type":"object","properties":{"count":{"$ref":"#/$defs/n"}},"required":["count"],"$defs":{"n":{"type":"integer"}}}`
	})
	cs := f.connectAt(nil, modernVersion)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var out any
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		if tool.Name == "tact_run" {
			out = tool.OutputSchema
		} else if tool.OutputSchema != nil {
			t.Errorf("%s has an outputSchema", tool.Name)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("tools listed %v, want them by name", names)
	}
	raw, _ := json.Marshal(out)
	if !strings.Contains(string(raw), `"final_answer":{"properties":{"count":{"$ref":"#/$defs/n"}}`) || !strings.Contains(string(raw), `"$defs":{"n":{"type":"integer"}}`) {
		t.Errorf("tact_run's outputSchema %s", raw)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "how many?"}})
	if err != nil || res.IsError {
		t.Fatalf("tact_run: %v %v", res, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if fa, _ := sc["final_answer"].(map[string]any); fa["count"] != float64(2) {
		t.Errorf("structured content %v", sc)
	}
	// The result's own order on the wire, not a map's.
	direct, err := f.srv.runResult(&react.Result{RunID: "r1", Success: true, FinalAnswer: "x", TerminationReason: react.ReasonSuccess})
	if err != nil {
		t.Fatal(err)
	}
	wire, _ := json.Marshal(direct.StructuredContent)
	if !strings.HasPrefix(string(wire), `{"run_id":"r1","success":true,"final_answer":"x","termination_reason":"success"`) {
		t.Errorf("structured content on the wire: %s", wire)
	}
}

// FuzzRequestState: a request state from outside (a client's retry)
// opens only when this server sealed it, never panics, and a sealed one
// opens to its payload for its own kind only.
func FuzzRequestState(f *testing.F) {
	s := newSealer()
	good := s.seal("run", "0123456789abcdef")
	if p, err := s.open("run", good); err != nil || p != "0123456789abcdef" {
		f.Fatalf("a sealed state: %q %v", p, err)
	}
	if _, err := s.open("call", good); err == nil {
		f.Fatal("a run's state opened as a call's")
	}
	f.Add(good)
	f.Add(good + "x")
	f.Add("")
	f.Add(".")
	f.Add("cnVuOjE.")
	f.Add(newSealer().seal("run", "0123456789abcdef"))
	f.Fuzz(func(t *testing.T, state string) {
		payload, err := s.open("run", state)
		if err == nil && state != good {
			// Only a state this sealer made opens: the fuzzer cannot
			// forge an HMAC-SHA256.
			if s.seal("run", payload) != state {
				t.Fatalf("state %q opened to %q without being sealed", state, payload)
			}
		}
	})
}

// FuzzAnswerOf: any content a client's elicitation result carries turns
// into an answer input or an error, never a panic; an approval's is one
// of approve, always or deny.
func FuzzAnswerOf(f *testing.F) {
	f.Add("accept", `{"answer":"yes"}`, true)
	f.Add("accept", `{"answer":"the blue one"}`, false)
	f.Add("decline", `{}`, false)
	f.Add("accept", `{"answer":{"port":8080}}`, false)
	f.Add("cancel", `{"answer":null}`, true)
	f.Fuzz(func(t *testing.T, action, content string, approval bool) {
		var m map[string]any
		if json.Unmarshal([]byte(content), &m) != nil {
			return
		}
		q := react.Question{Kind: react.KindQuestion, Question: "q?"}
		if approval {
			q.Kind = react.KindApproval
		}
		in, err := answerOf(q, &sdk.ElicitResult{Action: action, Content: m})
		if err != nil {
			return
		}
		n := 0
		for _, b := range []bool{in.Approve, in.Always, in.Deny, in.HasText, in.Value != nil} {
			if b {
				n++
			}
		}
		if n != 1 || approval != (in.Approve || in.Always || in.Deny) {
			t.Fatalf("%s %s: %+v, want exactly one answer of the question's kind", action, content, in)
		}
	})
}

// TestModernClientWithoutElicitation: a 2026-07-28 client that declared
// no elicitation is never sent an input request it cannot fulfil: a write
// only a person may approve is denied at once as unattended (as on
// 2025-11-25), and a run's ask_user gets "nobody can answer" as its
// observation.
func TestModernClientWithoutElicitation(t *testing.T) {
	f := pauseFixture(t, nil,
		action(t, `{"thought":"ask the user which one","tool":"ask_user","args":{"question":"Which one?"}}`),
		action(t, `{"thought":"nobody could answer, say so","tool":"final_answer","args":{"answer":"unanswered"}}`, "nobody can answer the question"))
	cs := f.connectAt(nil, modernVersion)
	text, isErr := call(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "no"})
	if !isErr || !strings.Contains(text, "when running unattended") {
		t.Errorf("write_file: %q isError %v, want the denial", text, isErr)
	}
	text, isErr = call(t, cs, "tact_run", map[string]any{"query": "which one?"})
	if isErr || text != "unanswered" {
		t.Errorf("tact_run: %q isError %v", text, isErr)
	}
}
