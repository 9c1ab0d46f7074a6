package policy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
)

// An "always" answer for a program that can run others, write or delete
// depending on its arguments saves a rule for exactly that call (issue 36
// item 13): a rule saved for `sed -n 1p f` never approves `sed 1e cmd`,
// nor one for `find . -name x` `find . -delete`. Programs known to only
// read keep the program-wide (or subcommand) rule. The rule survives the
// policy file's round trip.
func TestAlwaysRuleNarrowsRiskyPrograms(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	tests := []struct {
		call  string
		same  []string // calls the saved rule still approves
		worse []string // calls it must not approve
	}{
		{"sed -n 1p f", nil, []string{"sed 1e touch", "sed -n 1p f -e 1etouch", "sed -n '1e touch' f", "sed -i s/a/b/ f"}},
		{"tar -cf out.tar dir", nil, []string{"tar --to-command=sh -xf out.tar", "tar -cf out.tar dir --checkpoint-action=exec=sh", "tar -xf x.tar"}},
		{"find . -name x", nil, []string{"find . -delete", "find . -name x -delete", "find . -name x -fprint out"}},
		{"awk -F: '{print $1}' f", nil, []string{`awk 'BEGIN{system("touch x")}'`, `awk -F: '{print $1}' f '{system("x")}'`}},
		{"xargs -0 ls", []string{"xargs -0 ls -la"}, []string{"xargs rm", "xargs -0 sh -c 'rm x'"}},
		{"git clean -n", nil, []string{"git clean -fdx"}},
		{"git log --oneline", nil, []string{"git log --oneline --output=src/main.go"}},
		{"rm -rf build", nil, []string{"rm -rf build src", "rm -rf /"}},
		{"sh -c 'rm -rf build'", []string{"rm -rf build"}, []string{"rm -rf build src"}},
		{"env FOO=1 make test", []string{"make test"}, []string{"make test SHELL=/tmp/x", "make"}},
		{"python3 -m pytest -q", nil, []string{"python3 -m pytest -q -p evil", "python3 -m pytest -q --rootdir=/"}},
		// Read-only programs and subcommands keep the broad rule.
		{"git status -s", []string{"git status", "git status --porcelain", "nice git -C sub status"}, []string{"git push"}},
		{"ls -la", []string{"ls", "ls -R src"}, []string{"rm x"}},
		{"cat notes.txt", []string{"cat notes.txt other.txt"}, []string{"cp notes.txt x"}},
	}
	for _, tt := range tests {
		rule, err := AlwaysRule(env, runCall(tt.call))
		if err != nil {
			t.Errorf("AlwaysRule(%s): %v", tt.call, err)
			continue
		}
		// Saved and read back, as the next run will.
		path := filepath.Join(t.TempDir(), "policy.json")
		if err := AppendRule(path, rule); err != nil {
			t.Fatal(err)
		}
		pol, err := LoadPolicy(path)
		if err != nil {
			t.Fatalf("rule %v: %v", rule, err)
		}
		for _, c := range append([]string{tt.call}, tt.same...) {
			if allow, _ := pol.Match(env, runCall(c)); allow == nil {
				t.Errorf("rule %v saved for %q does not approve %q", rule, tt.call, c)
			}
		}
		for _, c := range tt.worse {
			if allow, _ := pol.Match(env, runCall(c)); allow != nil {
				t.Errorf("rule %v saved for %q approves %q", rule, tt.call, c)
			}
		}
	}
}

// "exact" is an allow rule's, on a command.
func TestParseExact(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"allow":[{"tool":"run_command","command":"sed -n 1p f","exact":true}]}`), "p.json")
	if err != nil || len(p.Allow) != 1 || !p.Allow[0].Exact || p.Allow[0].String() != `tool=run_command command="sed -n 1p f" exact` {
		t.Fatalf("parse: %+v, %v", p, err)
	}
	for data, want := range map[string]string{
		`{"deny":[{"command":"rm -rf /","exact":true}]}`: `"exact" is for allow rules`,
		`{"allow":[{"tool":"write_file","exact":true}]}`: `"exact" applies to a command`,
	} {
		if _, err := ParsePolicy([]byte(data), "p.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", data, err, want)
		}
	}
}
