package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tactcli/tact/internal/jqx"
)

// Jq is the jq tool.
type Jq struct{}

var jqSchema = schemaObject(map[string]any{
	"filter": schemaNonEmpty("jq filter, e.g. .items[] | select(.ok) | .name"),
	"input":  schemaNonEmpty("JSON text to run the filter on (one or more JSON values). Give exactly one of input and path."),
	"path":   schemaNonEmpty("Workspace file holding the JSON to run the filter on. Give exactly one of input and path."),
}, "filter")

func (Jq) Name() string { return "jq" }
func (Jq) Description() string {
	return "Run a jq filter over a JSON string or a workspace JSON file; prints each result as JSON, one per line."
}
func (Jq) Class() Class            { return ClassRead }
func (Jq) Schema() json.RawMessage { return jqSchema }
func (Jq) Declare() Decl           { return Decl{Paths: []string{"path"}} }

func (t Jq) Run(ctx context.Context, env *Env, raw json.RawMessage) Result {
	var filter, input, path string
	var hasInput, hasPath bool
	if err := decodeArgs(t.Name(), raw,
		argSpec{name: "filter", required: true, dst: &filter},
		argSpec{name: "input", dst: &input, set: &hasInput},
		argSpec{name: "path", dst: &path, set: &hasPath},
	); err != nil {
		return toolFail(err)
	}
	if hasInput == hasPath {
		return toolFail(errors.New("jq: give exactly one of input and path"))
	}
	// Checked before the input is read, within bounds (jqx.MaxFilterBytes;
	// long filters compile in a child process). jqx gives filters no
	// environment ($ENV is empty) and no module loader (no file access).
	if err := jqx.Check(filter); err != nil {
		return toolFail(fmt.Errorf("jq: bad filter %s: %v", jqx.Excerpt(filter), err))
	}

	var data []byte
	source := "input"
	limit := env.readCap()
	if hasPath {
		source = path
		f, _, _, err := env.openRegular(path)
		if err != nil {
			return toolFail(fmt.Errorf("jq: %w", err))
		}
		data, err = io.ReadAll(io.LimitReader(f, limit+1))
		f.Close()
		if err != nil {
			return toolFail(fmt.Errorf("jq: read %s: %w", path, unwrapPathError(err)))
		}
		if int64(len(data)) > limit {
			return toolFail(fmt.Errorf("jq: %s is larger than the read cap of %d bytes", path, limit))
		}
	} else {
		data = []byte(input)
		if int64(len(data)) > limit {
			return toolFail(fmt.Errorf("jq: input is larger than the read cap of %d bytes", limit))
		}
	}
	if err := checkJSONStream(data); err != nil {
		return toolFail(fmt.Errorf("jq: %s is not valid JSON: %v", source, err))
	}

	// The filter runs in a child process bounded in time (the tool timeout:
	// repeat, range(1e12) and `def f: f; f` end there) and in memory
	// (jqx.DefaultMemory: "x" * 1e9 or [range(1e9)] end there); its output
	// is bounded by the output cap.
	outCap := env.outputCap()
	res, err := jqx.Eval(ctx, jqx.Request{Expr: filter, Input: data, MaxOutput: outCap, Timeout: env.toolTimeout()})
	var out strings.Builder
	if res != nil {
		for _, b := range res.Results {
			if out.Len()+len(b)+1 > outCap {
				res.Cut = true
				break
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		if res.Cut {
			fmt.Fprintf(&out, "[jq: output cut at %d bytes]\n", outCap)
		}
	}
	var limitErr *jqx.LimitError
	var filterErr *jqx.FilterError
	var compileErr *jqx.CompileError
	switch {
	case err == nil:
		return Result{Output: out.String()}
	case errors.As(err, &compileErr):
		return Result{Output: out.String(), Err: fmt.Errorf("jq: bad filter %s: %v", jqx.Excerpt(filter), err)}
	case errors.As(err, &limitErr):
		return Result{Output: out.String(), Err: err}
	case errors.As(err, &filterErr):
		return Result{Output: out.String(), Err: fmt.Errorf("jq: %v", err)}
	case ctx.Err() != nil:
		return Result{Output: out.String(), Err: fmt.Errorf("jq: canceled: %w", ctx.Err())}
	}
	return Result{Output: out.String(), Err: err}
}

// checkJSONStream checks that data is a stream of one or more JSON values
// without building them (the child builds them, within its memory bound).
func checkJSONStream(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("no JSON value")
	}
	return nil
}
