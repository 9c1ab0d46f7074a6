package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/telemetry"
)

// Whole runs as one tool call: tact_run (a query, planned and executed)
// and tact_exec (a saved plan). The run goes through agent.Runtime.Run as
// tact run's does; each finished step is a progress notification, and the
// client's cancellation cancels the run's context (the model call, the
// command's process group).

const runSchema = `{"type":"object","properties":{
"query":{"type":"string","minLength":1,"description":"what to do, in plain words"},
"no_plan":{"type":"boolean","description":"free ReAct: no planner, the model picks every action"},
"max_iterations":{"type":"integer","minimum":1,"description":"action budget when no_plan is true"},
"schema":{"type":["object","boolean"],"description":"a JSON Schema the answer must validate against (as tact run --schema): the answer is then a JSON value, its compact JSON the text"}},
"required":["query"],"additionalProperties":false}`

const execSchema = `{"type":"object","properties":{
"path":{"type":"string","minLength":1,"description":"a saved plan (JSONL, as tact plan writes it) inside the workspace"},
"rows":{"type":"array","items":{"type":"object"},"minItems":1,"description":"the plan's rows inline, as tact plan writes them (a header row first is optional)"},
"query":{"type":"string","description":"the query, for a plan without a header"},
"schema":{"type":["object","boolean"],"description":"a JSON Schema the plan's final answer must validate against (as tact exec --schema)"}},
"additionalProperties":false}`

// resultSchema is tact_run's outputSchema under the server's --schema
// (nil without one): the result object, its final_answer the answer's
// JSON value valid against --schema. It holds for a run that succeeded
// (a result without isError) that has no schema argument of its own.
func resultSchema(answer string) (json.RawMessage, error) {
	if strings.TrimSpace(answer) == "" {
		return nil, nil
	}
	raw, err := schema.ReadAnswer(answer)
	if err != nil {
		return nil, fmt.Errorf("--schema: %v", err)
	}
	var ans map[string]any
	if err := json.Unmarshal(raw, &ans); err != nil {
		// true or false: the schema of every or no answer.
		return nil, nil
	}
	out := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"run_id":             map[string]any{"type": "string"},
			"success":            map[string]any{"type": "boolean"},
			"final_answer":       ans,
			"termination_reason": map[string]any{"type": "string"},
			"message":            map[string]any{"type": "string"},
			"iterations":         map[string]any{"type": "integer"},
			"token_usage":        map[string]any{"type": "object"},
			"execution_time_ms":  map[string]any{"type": "integer"},
			"state":              map[string]any{"type": "object"},
			"trace":              map[string]any{"type": "object"},
		},
		"required": []any{"run_id", "success", "final_answer", "termination_reason"},
	}
	// The answer schema's definitions move to the root, where its
	// references ("#/$defs/...") now point; "$schema" is a root's only.
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := ans[k]; ok {
			out[k] = d
			delete(ans, k)
		}
	}
	if d, ok := ans["$schema"]; ok {
		out["$schema"] = d
		delete(ans, "$schema")
	}
	return json.Marshal(out)
}

// maxPlanBytes bounds a saved plan read for tact_exec.
const maxPlanBytes = 4 << 20

// addRunTools offers tact_exec and, with a model, tact_run (a saved plan
// of tool rows needs no model).
func (s *Server) addRunTools() {
	destructive, openWorld := true, !s.rt.S.NoNetwork
	ann := &sdk.ToolAnnotations{DestructiveHint: &destructive, OpenWorldHint: &openWorld}
	if !s.rt.HasModel() {
		s.sdk.AddTool(execTool(ann), s.runHandler(s.decodeExec))
		return
	}
	run := &sdk.Tool{Name: "tact_run", Annotations: ann, InputSchema: json.RawMessage(runSchema),
		Description: "Run a whole tact job on the local model: plan the query, execute the plan with tact's tools in the workspace, and answer. The answer is the text; the result object (success, termination_reason, steps) is the structured content."}
	if out, err := resultSchema(s.rt.S.Schema); err != nil {
		s.log.Warn("tact_run is offered without an outputSchema", "err", err)
	} else if out != nil {
		run.OutputSchema = out
	}
	s.sdk.AddTool(run, s.runHandler(s.decodeRun))
	s.sdk.AddTool(execTool(ann), s.runHandler(s.decodeExec))
}

func execTool(ann *sdk.ToolAnnotations) *sdk.Tool {
	return &sdk.Tool{Name: "tact_exec", Annotations: ann, InputSchema: json.RawMessage(execSchema),
		Description: "Execute a saved tact plan (by path inside the workspace, or its rows inline) with tact's tools in the workspace; steps that need a model need one configured. The answer is the text; the result object is the structured content."}
}

// decodeRun makes tact_run's job: the query with the runtime's settings,
// no_plan and max_iterations replaced when given.
func (s *Server) decodeRun(args json.RawMessage) (agent.Job, error) {
	var in struct {
		Query         string          `json:"query"`
		NoPlan        *bool           `json:"no_plan"`
		MaxIterations *int            `json:"max_iterations"`
		Schema        json.RawMessage `json:"schema"`
	}
	if err := strictDecode(args, &in); err != nil {
		return agent.Job{}, err
	}
	if strings.TrimSpace(in.Query) == "" {
		return agent.Job{}, errors.New("query: empty")
	}
	st := *s.rt.S
	if err := setAnswerSchema(&st, in.Schema); err != nil {
		return agent.Job{}, err
	}
	if in.NoPlan != nil {
		st.NoPlan = *in.NoPlan
	}
	if in.MaxIterations != nil {
		if *in.MaxIterations < 1 {
			return agent.Job{}, errors.New("max_iterations: must be at least 1")
		}
		st.MaxIterations = *in.MaxIterations
	}
	return agent.Job{Query: in.Query, Settings: &st}, nil
}

// decodeExec makes tact_exec's job from a plan file in the workspace or
// inline rows.
func (s *Server) decodeExec(args json.RawMessage) (agent.Job, error) {
	var in struct {
		Path   string            `json:"path"`
		Rows   []json.RawMessage `json:"rows"`
		Query  string            `json:"query"`
		Schema json.RawMessage   `json:"schema"`
	}
	if err := strictDecode(args, &in); err != nil {
		return agent.Job{}, err
	}
	job := agent.Job{Query: in.Query}
	if len(in.Schema) > 0 {
		st := *s.rt.S
		if err := setAnswerSchema(&st, in.Schema); err != nil {
			return job, err
		}
		job.Settings = &st
	}
	switch {
	case in.Path != "" && len(in.Rows) > 0:
		return job, errors.New("give path or rows, not both")
	case in.Path != "":
		data, err := s.readPlan(in.Path)
		if err != nil {
			return job, err
		}
		job.PlanName, job.PlanData = in.Path, data
	case len(in.Rows) > 0:
		var b strings.Builder
		for _, r := range in.Rows {
			b.Write(r)
			b.WriteByte('\n')
		}
		job.PlanName, job.PlanData = "rows", []byte(b.String())
	default:
		return job, errors.New("give path (a saved plan in the workspace) or rows")
	}
	return job, nil
}

// readPlan reads a plan inside the workspace, through its os.Root so no
// symlink can lead out.
func (s *Server) readPlan(path string) ([]byte, error) {
	real, err := s.rt.Env.Resolve(path)
	if err != nil {
		return nil, fmt.Errorf("path: %v", err)
	}
	root, err := os.OpenRoot(s.rt.Env.Workspace)
	if err != nil {
		return nil, fmt.Errorf("path: %v", err)
	}
	defer root.Close()
	// Non-blocking, and only a regular file: a FIFO must not hang the
	// call (opening one waits for a writer), a device is never read.
	f, err := root.OpenFile(filepath.ToSlash(s.rt.Env.Rel(real)), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("path %q: %v", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("path %q: %v", path, err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("path %q: is %s, not a regular file", path, filekind.Name(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("path %q: %v", path, err)
	}
	if len(data) > maxPlanBytes {
		return nil, fmt.Errorf("path %q: larger than %d bytes", path, maxPlanBytes)
	}
	return data, nil
}

// runHandler runs the job decode makes of the call's arguments. A client
// on 2026-07-28 gets a paused run as an input-required result
// (pausingRun); earlier ones are asked by elicitation while it runs.
func (s *Server) runHandler(decode func(json.RawMessage) (agent.Job, error)) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if s.asksByResult(req.Session) {
			return s.pausingRun(ctx, req, decode)
		}
		job, err := decode(json.RawMessage(req.Params.Arguments))
		if err != nil {
			return s.textResult("bad arguments: "+err.Error(), true), nil
		}
		res, out, err := s.runJob(ctx, req, job)
		if err != nil || out != nil {
			return out, err
		}
		return s.runResult(res)
	}
}

// runJob runs job for the call: a fresh run id, the call's progress, the
// session's gate, a free model sequence. A result or error instead of
// the run's result is the call's answer.
func (s *Server) runJob(ctx context.Context, req *sdk.CallToolRequest, job agent.Job) (*react.Result, *sdk.CallToolResult, error) {
	job.ID = react.NewRunID()
	job.Events = s.progress(ctx, req)
	// The session's gate: its questions go to this client and wait on
	// no other session's; --approve-cmd and the policy apply as ever.
	job.Gate = s.session(req.Session).gate
	if s.runs != nil {
		select {
		case s.runs <- struct{}{}:
			defer func() { <-s.runs }()
		case <-ctx.Done():
			return nil, s.textResult("cancelled while waiting for a free model sequence", true), nil
		}
	}
	// A client's traceparent in _meta: the run continues its trace.
	ctx = telemetry.ExtractMeta(ctx, req.Params.Meta)
	res, err := s.rt.Run(withSession(ctx, req.Session), job)
	if err != nil {
		return nil, s.textResult(err.Error(), true), nil
	}
	return res, nil, nil
}

// runResult is a run's result as the call's: the answer (or how the run
// ended) as text, the result object, redacted and in its own field order
// (run_id, success, final_answer, ...), as the structured content.
func (s *Server) runResult(res *react.Result) (*sdk.CallToolResult, error) {
	raw, err := text.JSON(res)
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	structured := json.RawMessage(s.rt.Redactor.RedactJSON(raw))
	answer := res.FinalAnswer
	if !res.Success {
		answer = fmt.Sprintf("run ended: %s", res.TerminationReason)
		if res.Message != "" {
			answer += ": " + res.Message
		}
		if res.FinalAnswer != "" {
			answer += "\n" + res.FinalAnswer
		}
	}
	out := s.textResult(answer, !res.Success)
	out.StructuredContent = structured
	return out, nil
}

// progress is the sink that sends each finished step of the run to the
// client as a progress notification, when the call asked for them (a
// progress token).
func (s *Server) progress(ctx context.Context, req *sdk.CallToolRequest) react.Sink {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	steps := 0
	return react.SinkFunc(func(ev react.Event) {
		if ev.Type != react.EventStep {
			return
		}
		var st react.StepTrace
		_ = ev.Decode("step", &st)
		steps++
		msg := fmt.Sprintf("step %d: %s", steps, st.Action.Tool)
		if st.Error != "" || st.ExitCode != 0 {
			msg += " (failed)"
		}
		// Events come one at a time from the run's goroutine; a client
		// that is gone only loses its progress.
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(steps), Message: s.rt.Redactor.Redact(msg)})
	})
}

// strictDecode decodes one JSON object into v, refusing unknown names.
func strictDecode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

// setAnswerSchema makes a call's schema argument the run's answer schema
// (compiled first: one that does not compile is the call's error, naming
// the keyword path); none keeps the server's --schema.
func setAnswerSchema(st *config.Settings, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	// Bounded on its bytes before it is compiled, as the step API's
	// schemas (2,500 nested objects: a minute of CPU and 690 MB).
	if err := schema.CheckSize(raw); err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	compiled, err := schema.CompileAnswer(raw)
	if err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	st.Schema = string(compiled) // inline JSON, never an @FILE
	return nil
}
