package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/schema"
)

// Failure is one check of a case that did not pass in a trial.
type Failure struct {
	// Check names the check as reports show it: an assertion's name or
	// "jq EXPR", "answer_schema", a file check's name or "PATH KIND",
	// or "document" when the run's document is not a JSON object.
	Check   string `json:"check"`
	Message string `json:"message"` // one line: what the check found
}

// maxFileRead caps what a file check reads of one file: a workspace file
// that grew without bound must not fill memory to be compared.
const maxFileRead = 64 << 20

// maxShown caps a value quoted in a message.
const maxShown = 200

// Check runs the case's checks on one finished trial: doc is the run's
// --json document, workspace the trial's workspace after the run. It
// returns the checks that did not pass, in the case's order (assertions,
// answer schema, files); none when all passed. A case with Err is not
// checked (it did not run). Check only reads the case: trials may check
// at once.
func (c *Case) Check(ctx context.Context, doc []byte, workspace string) []Failure {
	var out []Failure
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil || top == nil {
		// Without the document no assertion can say anything; the file
		// checks still can.
		out = append(out, Failure{Check: "document", Message: "the run's --json document is not a JSON object"})
	} else {
		for _, a := range c.Asserts {
			if msg := evalAssert(ctx, a.JQ, doc); msg != "" {
				out = append(out, Failure{Check: a.Label(), Message: msg})
			}
		}
		if c.AnswerSchema != nil {
			if msg := checkAnswer(c.AnswerSchema, top); msg != "" {
				out = append(out, Failure{Check: "answer_schema", Message: msg})
			}
		}
		if len(c.Asserts) == 0 && c.AnswerSchema == nil && len(c.Files) == 0 && string(top["success"]) != "true" {
			// A case with no check of its own is a smoke test: it passes
			// when its run succeeds, never on a run that failed or hung.
			out = append(out, Failure{Check: "success", Message: fmt.Sprintf("the run ended as %s; a case without assert, answer_schema or files passes when its run succeeds", shown(top["termination_reason"]))})
		}
	}
	if len(c.Files) == 0 {
		return out
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		for _, f := range c.Files {
			out = append(out, Failure{Check: f.Label(), Message: "cannot open the workspace: " + unwrapPath(err).Error()})
		}
		return out
	}
	defer root.Close()
	for _, f := range c.Files {
		if msg := checkFileIn(root, c.Fixture, f); msg != "" {
			out = append(out, Failure{Check: f.Label(), Message: msg})
		}
	}
	return out
}

// jqSlots bounds the assertions evaluated at once: each runs in a child
// process of up to 256 MiB, and --parallel 64 trials checking at once
// would otherwise hold 16 GiB.
var jqSlots = make(chan struct{}, 4)

// evalAssert evaluates one assertion; "" when it yielded exactly true,
// else what it yielded or why it could not run.
func evalAssert(ctx context.Context, expr string, doc []byte) string {
	select {
	case jqSlots <- struct{}{}:
		defer func() { <-jqSlots }()
	case <-ctx.Done():
		return "not evaluated: " + ctx.Err().Error()
	}
	out, err := jqx.Eval(ctx, jqx.Request{Expr: expr, Input: doc, MaxResults: 3, MaxOutput: 64 << 10})
	if err != nil {
		var fe *jqx.FilterError
		if errors.As(err, &fe) {
			return "jq: " + oneLine(fe.Msg)
		}
		return oneLine(err.Error())
	}
	switch n := len(out.Results); {
	case n == 0:
		return "yielded nothing, want true"
	case n > 1:
		vals := make([]string, 0, n)
		for _, r := range out.Results[:min(n, 2)] {
			vals = append(vals, shown(r))
		}
		more := ""
		if n > 2 {
			more = ", ..."
		}
		return fmt.Sprintf("yielded %d or more values (%s%s), want exactly one, true", n, strings.Join(vals, ", "), more)
	case string(out.Results[0]) != "true":
		return "yielded " + shown(out.Results[0]) + ", want true"
	}
	return ""
}

// checkAnswer validates the document's final_answer against the answer
// schema: the answer's JSON value under the run's --schema, else its
// text as a JSON string.
func checkAnswer(answer json.RawMessage, top map[string]json.RawMessage) string {
	v, ok := top["final_answer"]
	if !ok {
		return "the document has no final_answer"
	}
	if _, err := schema.CheckAnswer(answer, v, "final_answer"); err != nil {
		return "final_answer " + shown(v) + " does not validate: " + oneLine(err.Error())
	}
	return ""
}

// checkFileIn runs one file check in the workspace root (a symbolic link
// leading out of it is not followed).
func checkFileIn(root *os.Root, fixture string, f FileCheck) string {
	p := filepath.FromSlash(f.Path)
	switch {
	case f.Exists:
		if _, err := root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return "missing: " + why(err)
		} else if err != nil {
			return why(err)
		}
	case f.Absent:
		if st, err := root.Lstat(p); err == nil {
			return fmt.Sprintf("present (%s), want absent", kindOf(st))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "cannot tell: " + why(err)
		}
	case f.Contains != nil:
		data, err := readIn(root, p)
		if err != nil {
			return why(err)
		}
		if !bytes.Contains(data, []byte(*f.Contains)) {
			return fmt.Sprintf("does not contain %s (%d bytes)", excerpt(*f.Contains), len(data))
		}
	case f.Unchanged:
		data, err := readIn(root, p)
		if err != nil {
			return why(err)
		}
		want, err := readFixture(fixture, p)
		if err != nil {
			return "cannot read the fixture's copy: " + why(err)
		}
		if !bytes.Equal(data, want) {
			return fmt.Sprintf("changed: %d bytes, the fixture's %d (first difference at byte %d)", len(data), len(want), firstDiff(data, want))
		}
	}
	return ""
}

// readFixture reads a file of the fixture as readIn does: within the
// fixture, within maxFileRead.
func readFixture(fixture, p string) ([]byte, error) {
	root, err := os.OpenRoot(fixture)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readIn(root, p)
}

// readIn reads a regular file of the workspace, within maxFileRead.
func readIn(root *os.Root, p string) ([]byte, error) {
	st, err := root.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is %s, not a regular file", kindOf(st))
	}
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileRead+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileRead {
		return nil, fmt.Errorf("larger than the %d MiB a file check reads", maxFileRead>>20)
	}
	return data, nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func kindOf(st fs.FileInfo) string {
	switch m := st.Mode(); {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return fmt.Sprintf("a file of %d bytes", st.Size())
	}
	return "a special file"
}

// why is an error's reason without the path the check already names.
func why(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file or directory"
	}
	msg := unwrapPath(err).Error()
	if msg == "path escapes from parent" { // os.Root's error, not exported
		return "a link on the path leads out of the workspace: not followed"
	}
	return oneLine(msg)
}

// shown is a JSON value for a message: compact, cut to maxShown bytes.
func shown(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		b.Reset()
		b.Write(v)
	}
	s := b.String()
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
	}
	return s
}

// Control and bidi characters (a terminal's escape sequences, a NUL from an
// edited case file or a model's answer) are written as \uXXXX: the table
// goes to a terminal and must not drive it.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if !strings.ContainsFunc(s, unprintable) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unprintable(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unprintable(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}
