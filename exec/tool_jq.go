package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/itchyny/gojq"
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
	q, err := gojq.Parse(filter)
	if err != nil {
		return toolFail(fmt.Errorf("jq: bad filter %q: %v", filter, err))
	}
	// No environment loader: $ENV and env stay empty, so a filter cannot
	// read tact's environment; no module loader, so no file access.
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return toolFail(fmt.Errorf("jq: bad filter %q: %v", filter, err))
	}

	var data []byte
	source := "input"
	if hasPath {
		source = path
		f, _, _, err := env.openRegular(path)
		if err != nil {
			return toolFail(fmt.Errorf("jq: %w", err))
		}
		limit := env.readCap()
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
	}

	values, err := decodeJSONStream(data)
	if err != nil {
		return toolFail(fmt.Errorf("jq: %s is not valid JSON: %v", source, err))
	}

	// A filter can generate without end (repeat, range(1e12)): bound its time
	// like a command's and its output by the output cap.
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, env.toolTimeout())
	defer cancel()
	limit := env.outputCap()
	var out strings.Builder
	for _, v := range values {
		iter := code.RunWithContext(ctx, v)
		for {
			r, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := r.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					return Result{Output: out.String()} // plain halt: stop quietly
				}
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					if perr := parent.Err(); perr != nil {
						return Result{Output: out.String(), Err: fmt.Errorf("jq: canceled: %w", perr)}
					}
					return Result{Output: out.String(), Err: fmt.Errorf("jq: filter timed out after %s", shortDuration(env.toolTimeout()))}
				}
				return Result{Output: out.String(), Err: fmt.Errorf("jq: %v", err)}
			}
			b, err := gojq.Marshal(r)
			if err != nil {
				return Result{Output: out.String(), Err: fmt.Errorf("jq: encode result: %v", err)}
			}
			if out.Len()+len(b)+1 > limit {
				fmt.Fprintf(&out, "[jq: output cut at %d bytes]\n", limit)
				return Result{Output: out.String()}
			}
			out.Write(b)
			out.WriteByte('\n')
		}
	}
	return Result{Output: out.String()}
}

// decodeJSONStream parses every JSON value in data (jq accepts a stream).
// Numbers stay json.Number so big integers survive; gojq understands them.
func decodeJSONStream(data []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var values []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		return nil, errors.New("no JSON value")
	}
	return values, nil
}
