package planner

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/tools"
)

// commandFor templatizes a one-step run_command plan whose command is
// tmpl with parameter file, binds value and returns the command line the
// step runs.
func commandFor(t testing.TB, tmpl, value string) (string, error) {
	t.Helper()
	reg := tools.DefaultRegistry()
	args, _ := json.Marshal(map[string]string{"command": tmpl})
	p := &Plan{Header: &Header{Type: "plan", Query: "q"}, Steps: []Step{{Tool: "run_command", Args: map[string]json.RawMessage{"command": args[len(`{"command":`) : len(args)-1]}}}}
	if err := templatize(p, []string{"file"}, reg); err != nil {
		return "", err
	}
	v, _ := json.Marshal(value)
	if err := BindParams(p, map[string]json.RawMessage{"file": v}, reg); err != nil {
		t.Fatalf("bind %q into %q: %v", value, tmpl, err)
	}
	raw, ok := argValue(t, p.Steps[0].Args["command"])
	var cmd string
	if !ok || json.Unmarshal(raw, &cmd) != nil {
		t.Fatalf("%q: command %s", tmpl, raw)
	}
	return cmd, nil
}

// hostile are values a parameter may be given (by a /v1/runs client, a
// batch line, a file): each must reach the program as one argument, as
// it is, and run nothing.
var hostile = []string{"my notes.txt", "a.txt; touch PWNED", `x'y"z`, "$(touch PWNED)", "`touch PWNED`",
	`\`, `\\'`, "", "a\nb", "--", "*", "'; touch PWNED; '", `"; touch PWNED; "`, "$HOME", "{{file}}", "é\t\x01"}

// A parameter in a planned command line is one word (issue 36 item 4):
// `wc -c {{file}}` with `my notes.txt` does not split, and `a.txt; touch
// PWNED` in a planned sh -c runs nothing. Each template prints the value
// between brackets; it must come out exactly, and no PWNED file appear.
func TestTemplateCommandOneWord(t *testing.T) {
	for _, sh := range []string{"sh", "bash"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Skipf("no %s", sh)
		}
	}
	templates := []string{
		`printf [%s] {{file}}`,
		`printf [%s] --x={{file}}`,
		`sh -c 'printf "[%s]" {{file}}'`,
		`sh -c "printf '[%s]' {{file}}"`,
		`sh -c 'printf "[%s]" "{{file}}"'`,
		`sh -c "printf '[%s]' '{{file}}'"`,
		`sh -c 'printf "[%s]" "<{{file}}>"' `,
		`bash -c 'x={{file}}; printf "[%s]" "$x"'`,
		`sh -ec 'printf "[%s]" {{file}}'`,
		`sh -c "sh -c 'printf \"[%s]\" {{file}}'"`,
		`sh -c 'sh -c "printf [%s] {{file}}"'`,
		`env A=1 sh -c 'printf "[%s]" {{file}}'`,
	}
	for _, tmpl := range templates {
		for _, v := range hostile {
			dir := t.TempDir()
			cmd, err := commandFor(t, tmpl, v)
			if err != nil {
				t.Fatalf("%q: %v", tmpl, err)
			}
			argv, err := shellquote.Split(cmd)
			if err != nil {
				t.Fatalf("%q with %q: %q does not split: %v", tmpl, v, cmd, err)
			}
			c := exec.Command(argv[0], argv[1:]...)
			c.Dir = dir
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			if err := c.Run(); err != nil {
				t.Errorf("%q with %q: %q: %v: %s", tmpl, v, cmd, err, errb.String())
				continue
			}
			want := "[" + v + "]"
			if strings.Contains(tmpl, "--x=") {
				want = "[--x=" + v + "]"
			} else if strings.Contains(tmpl, "<{{file}}>") {
				want = "[<" + v + ">]"
			}
			if out.String() != want {
				t.Errorf("%q with %q: ran %q, printed %q, want %q", tmpl, v, cmd, out.String(), want)
			}
			if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
				t.Errorf("%q with %q: ran %q, which made PWNED", tmpl, v, cmd)
			}
		}
	}
}

// Where no quoting keeps a value one word, tact plan writes no plan.
func TestTemplateCommandRefused(t *testing.T) {
	for _, tmpl := range []string{
		`python3 -c "print('{{file}}')"`,
		`perl -ne 'print if /{{file}}/' x`,
		`sh -c 'echo ${x:-{{file}}}'`,
		"sh -c 'cat <<EOF\n{{file}}\nEOF'",
		`eval echo {{file}}`,
		`ssh host ls {{file}}`,
		`sh -c 'echo $(( {{file}} ))'`,
		`sh -c 'echo hi # {{file}}'`,
		`sh -c 'echo ` + "`echo {{file}}`" + `'`,
		`sh -c '$CMD {{file}}'`,
		`sh -c 'eval {{file}}'`,
		`sh -c "python3 -c 'print({{file}})'"`,
		`sh -c 'echo $'"'"'{{file}}'"'"''`,
		`echo 'unterminated {{file}}`,
	} {
		if cmd, err := commandFor(t, tmpl, "x"); err == nil {
			t.Errorf("%q templatized to %q, want it refused", tmpl, cmd)
		}
	}
	// Placeholders of names not declared, and data arguments, are as before.
	if cmd, err := commandFor(t, `echo {{other}}`, "x"); err != nil || cmd != "echo {{other}}" {
		t.Errorf("undeclared placeholder: %q, %v", cmd, err)
	}
}
