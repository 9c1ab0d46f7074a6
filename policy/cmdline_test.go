package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/policy/cmdline"
	"github.com/tactcli/tact/tools"
)

// runCall is a run_command call with the given command line.
func runCall(command string) tools.Call {
	args, _ := json.Marshal(map[string]string{"command": command})
	return gtCall("run_command", tools.ClassExec, string(args))
}

// Deny rules match what runs, however it is spelled: paths, wrappers and
// their options, shell scripts, global options. Each row is a bypass of
// the old argv-prefix matching, or a form that must stay unmatched.
func TestDenyRuleForms(t *testing.T) {
	ws := t.TempDir()
	env := &tools.Env{Workspace: ws}
	tests := []struct {
		rule, command string
		denied        bool
	}{
		// Program paths reduce to the program's name.
		{"rm", "rm x", true},
		{"rm", "/bin/rm x", true},
		{"rm", "/usr/bin/rm -rf x", true},
		{"rm", "./rm x", true},
		{"rm", "../../usr/bin/rm x", true},
		{"/bin/rm", "rm x", true},
		// Wrappers and their options.
		{"rm", "env rm x", true},
		{"rm", "env -i FOO=1 rm x", true},
		{"rm", "env -u HOME -C /tmp FOO=1 BAR=2 rm x", true},
		{"rm", "env -S 'rm x'", true},
		{"rm", "/usr/bin/env -- rm x", true},
		{"rm", "nice rm x", true},
		{"rm", "nice -n 5 rm x", true},
		{"rm", "nice -10 rm x", true},
		{"rm", "nohup rm x", true},
		{"rm", "timeout 5 rm x", true},
		{"rm", "timeout -s KILL -k 1 5s rm x", true},
		{"rm", "timeout --signal=KILL 5 rm x", true},
		{"rm", "setsid rm x", true},
		{"rm", "setsid -f rm x", true},
		{"rm", "stdbuf -o0 rm x", true},
		{"rm", "stdbuf -o L -e0 rm x", true},
		{"rm", "sudo rm x", true},
		{"rm", "sudo -u root rm x", true},
		{"rm", "sudo -E -u root -- FOO=1 rm x", true},
		{"rm", "doas -u root rm x", true},
		{"rm", "command rm x", true},
		{"rm", "exec rm x", true},
		{"rm", "builtin rm x", true},
		{"rm", "xargs rm", true},
		{"rm", "xargs -0 -n 1 rm", true},
		{"rm", "xargs -I{} rm {}", true},
		{"rm", "busybox rm x", true},
		{"rm", "time rm x", true},
		{"rm", "ionice -c 3 rm x", true},
		{"rm", "chrt -b 0 rm x", true},
		{"rm", "taskset -c 0 rm x", true},
		{"rm", "chroot / rm x", true},
		{"rm", "unshare -r rm x", true},
		{"rm", "flock /tmp/l rm x", true},
		{"rm", "flock /tmp/l -c 'rm x'", true},
		{"rm", "watch -n 1 rm x", true},
		{"rm", "strace -f rm x", true},
		{"rm", "su -c 'rm x' root", true},
		{"rm", "su root -c 'rm x'", true},
		{"rm", "runuser -u nobody -- rm x", true},
		{"rm", "find . -name '*.o' -exec rm {} ;", true},
		{"rm", "find . -execdir rm -f {} +", true},
		{"rm", "nice -n 5 timeout 5 env FOO=1 sudo -u root rm x", true},
		// Shell scripts, parsed.
		{"rm", `sh -c "rm x"`, true},
		{"rm", `bash -c 'rm x'`, true},
		{"rm", `dash -c 'rm x'`, true},
		{"rm", `zsh -c 'rm x'`, true},
		{"rm", `bash -lc 'cd /tmp && rm x'`, true},
		{"rm", `bash -ec 'true; rm x'`, true},
		{"rm", `bash -euo pipefail -c 'rm x'`, true},
		{"rm", `sh -c -- 'rm x'`, true},
		{"rm", `sh -c 'ls | rm x'`, true},
		{"rm", `sh -c 'false || rm x'`, true},
		{"rm", `sh -c '(cd /tmp; rm x)'`, true},
		{"rm", `sh -c '{ rm x; }'`, true},
		{"rm", `sh -c 'echo $(rm x)'`, true},
		{"rm", "sh -c 'echo `rm x`'", true},
		{"rm", `bash -c 'cat <(rm x)'`, true},
		{"rm", `sh -c 'f(){ rm x; }; f'`, true},
		{"rm", `sh -c 'if true; then rm x; fi'`, true},
		{"rm", `sh -c 'for f in a b; do rm "$f"; done'`, true},
		{"rm", `sh -c 'while false; do :; done; rm x &'`, true},
		{"rm", `sh -c 'x=$(rm x)'`, true},
		{"rm", `sh -c 'cat <<EOF
$(rm x)
EOF'`, true},
		{"rm", `sh -c "sh -c 'rm x'"`, true},
		{"rm", `sh -c 'env nice /bin/rm x'`, true},
		{"rm", `sh -c 'r\m x'`, true},
		{"rm", `sh -c '"r"m x'`, true},
		{"rm", `bash -c "$'\\x72m' x"`, true},
		{"rm", `sh -c 'trap "rm x" EXIT'`, true},
		{"rm", `sh -c 'eval "rm x"'`, true},
		{"rm", `sh -c 'rm(){ :; }; rm x'`, true},
		// Not analysable, but the rule's words are in the text.
		{"rm", `sh -c 'c=rm; $c x'`, true},
		{"rm", `sh -c 'eval "$(echo rm x)"'`, true},
		{"rm", `python3 -c 'import os; os.system("rm x")'`, true},
		// Global options before the subcommand.
		{"git push", "git push", true},
		{"git push", "git -c x=y push", true},
		{"git push", "git -C dir push origin main", true},
		{"git push", "git --no-pager push", true},
		{"git push", "git --git-dir=.git --work-tree . push", true},
		{"git push", "git -p -C a -C b push", true},
		{"git push", `sh -c 'cd repo && git -C . push'`, true},
		{"git push", `sh -c 'git $(echo push)'`, true},
		{"kubectl delete", "kubectl -n prod delete pod x", true},
		{"kubectl delete", "kubectl --context=prod delete pod x", true},
		{"docker rm", "docker -H tcp://x rm c", true},
		{"systemctl stop", "systemctl --user stop x", true},
		// Deny rules on wrappers see the wrapper layer.
		{"sudo", "sudo -u root rm x", true},
		{"sh", `bash -c 'sh -c "true"'`, true},
		{"env", "nice env X=1 true", true},
		// Must not match.
		{"rm", "echo rm", false},
		{"rm", "rmdir x", false},
		{"rm", "grep rm file", false},
		{"rm", "env FOO=rm true", false},
		{"rm", `sh -c 'echo rm; printf "%s" rm'`, false},
		{"rm", "git rm x", false},
		{"rm", "command -v rm", false},
		{"rm", "ls -l /bin/rm", false},
		{"rm", "sudo -l", false},
		{"rm", "find . -name rm", false},
		{"git push", "git status", false},
		{"git push", "git log --grep push", false},
		{"git push", "git -C push status", false},
		{"git push", "echo git push", false},
		{"git push", "gitpush", false},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"|"+tt.command, func(t *testing.T) {
			p := &Policy{Deny: []Rule{{Tool: "run_command", Command: tt.rule}}}
			_, deny := p.Match(env, runCall(tt.command))
			if (deny != nil) != tt.denied {
				an := cmdline.AnalyzeCommand(mustSplit(t, tt.command), analyzeOptions(env, ""))
				t.Errorf("denied = %v, want %v; analysis: %+v", deny != nil, tt.denied, an)
			}
			// --yes never overrides a deny.
			if tt.denied {
				v := NewGate(GateOptions{Policy: p, Yes: true}).Check(t.Context(), env, []tools.Call{runCall(tt.command)})
				if v[0].Allowed || v[0].Decision != DecisionDeny {
					t.Errorf("with --yes: %+v, want denied", v[0])
				}
			}
		})
	}
}

func mustSplit(t *testing.T, command string) []string {
	t.Helper()
	var f callFacts
	args, _ := json.Marshal(map[string]string{"command": command})
	f = factsOf(nil, gtCall("run_command", tools.ClassExec, string(args)))
	if f.argv == nil {
		t.Fatalf("cannot split %q", command)
	}
	return f.argv
}

// Allow rules approve a call only when it is fully analysable and every
// command it runs is allowed.
func TestAllowRuleForms(t *testing.T) {
	ws := t.TempDir()
	// A workspace program that shares a name with a system one.
	os.WriteFile(filepath.Join(ws, "git"), []byte("#!/bin/sh\nrm -rf ~\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "env"), []byte("#!/bin/sh\nrm -rf ~\n"), 0o755)
	env := &tools.Env{Workspace: ws}
	allow := []Rule{
		{Tool: "run_command", Command: "git status"},
		{Tool: "run_command", Command: "git log"},
		{Tool: "run_command", Command: "ls"},
		{Tool: "run_command", Command: "sudo apt update"},
		{Tool: "run_command", Command: "apt update"},
		{Tool: "run_command", Command: "./build.sh"},
		{Command: "make test"},
		{Tool: "run_command", Command: `sh -c 'ls; date'`},
	}
	tests := []struct {
		command string
		allowed bool
	}{
		{"git status", true},
		{"git status -s", true},
		{"git -c color.ui=never status", true},
		{"git -C sub --no-pager status", true},
		{"env LC_ALL=C git status", true},
		{"nice -n 5 timeout 10 git status", true},
		{`sh -c 'git status'`, true},
		{`bash -c 'cd sub && git status && git log -1'`, true},
		{`sh -c 'git status | ls'`, true},
		{`sh -c 'git status 2>&1 >/dev/null'`, true},
		{"sudo apt update", true},
		{"./build.sh", true},
		{"make test", true},
		{`sh -c 'ls; date'`, true}, // the whole line, word for word
		// Not allowed.
		{`sh -c 'git status; rm x'`, false},
		{`sh -c 'git status && $(rm x)'`, false},
		{`sh -c 'git status > /etc/passwd'`, false}, // writes a file
		{"git push", false},
		{"git statusx", false},
		{"git -c alias.status=push status", false},     // alias through -c
		{"git -c core.pager='rm -rf ~' status", false}, // runs a program
		{"env PATH=.:/usr/bin git status", false},      // another git
		{"env LD_PRELOAD=./x.so git status", false},    // injected code
		{"./git status", false},                        // not the PATH git
		{"sudo git status", false},                     // the runner needs its own rule
		{"sudo ls", false},                             // ditto
		{"apt update", true},                           // (sanity: rule exists)
		{`sh -c 'c=git; $c status'`, false},            // command name from a variable
		{`sh -c 'eval "git status"'`, false},           // eval
		{`sh -c '. ./env.sh; git status'`, false},      // source
		{"sh script.sh", false},                        // script file
		{`sh -c 'ls; date; id'`, false},                // not word for word, id not allowed
		{"xargs git status", true},                     // input only adds arguments after the prefix
		{"xargs git", false},                           // the subcommand comes from input
		{`sh -c 'git stat"$x"'`, false},                // dynamic subcommand
		{`sh -c 'cd /tmp'`, false},                     // no rule matched anything
		{"python3 -c 'import os'", false},              // inline code
		{"find . -exec ls {} ;", false},                // find itself is not allowed
		{"ls ';' rm x", true},                          // no shell: ";" is an argument of ls
		{"./env git status", false},                    // a workspace "env" is not env
		{"timeout --bogus 5 git status", false},        // unknown wrapper option
		{"env -S 'git $X status'", false},              // env -S with a variable
		{"build.sh", false},                            // PATH lookup, not ./build.sh
		{"/usr/bin/env git status", true},              // env by path is still env
		{"bash -c 'git status' extra args", true},      // $0 and $1 are data
		{`bash -c '"$@"' sh git status`, false},        // command name from arguments
		{`bash --rcfile x -c 'git status'`, true},      // known shell option with value
		{"bash --frobnicate -c 'git status'", false},   // unknown shell option
		{"timeout 5", false},                           // nothing to run, nothing allowed
		{"nohup", false},                               // ditto
		{"git", false},                                 // no subcommand
		{"make test -j4", true},                        // rule without tool applies to run_command
		{"make", false},                                // shorter than the rule
		{`sh -c 'make test > build.log'`, false},       // writes a file
		{`sh -c 'make test 2>/dev/null >&2'`, true},    // only standard streams
		{`sh -c 'f(){ git status; }; f; f'`, true},     // function body analysed
		{`sh -c 'f(){ rm x; }; f'`, false},             // ditto
		{`bash -c 'for d in a b; do git -C "$d" status; done'`, true},
	}
	p := &Policy{Allow: allow}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			a, _ := p.Match(env, runCall(tt.command))
			if (a != nil) != tt.allowed {
				an := cmdline.AnalyzeCommand(mustSplit(t, tt.command), analyzeOptions(env, ""))
				t.Errorf("allowed = %v (by %v), want %v; analysis: %+v", a != nil, a, tt.allowed, an)
			}
		})
	}
}

// A rule without a command covers every run_command call, analysable or
// not: it says nothing about the command.
func TestAllowToolRuleCoversUnanalysable(t *testing.T) {
	p := &Policy{Allow: []Rule{{Tool: "run_command"}}}
	if a, _ := p.Match(nil, runCall(`sh -c '$X'`)); a == nil {
		t.Errorf("tool-wide allow rule did not cover an unanalysable call")
	}
}

// Symlinked programs: deny rules match the name typed and the file it
// resolves to; allow rules only the name typed.
func TestAnalyzeSymlinkTarget(t *testing.T) {
	bin := t.TempDir()
	real := filepath.Join(bin, "python3.11")
	os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755)
	if err := os.Symlink("python3.11", filepath.Join(bin, "python3")); err != nil {
		t.Skip(err)
	}
	an := cmdline.AnalyzeCommand([]string{"python3", "x.py"}, cmdline.AnalyzeOptions{Dir: bin, PATH: bin, Resolve: true})
	if len(an.Commands) != 1 || an.Commands[0].Name != "python3" || an.Commands[0].Target != "python3.11" || !an.Commands[0].OnPath {
		t.Fatalf("analysis = %+v", an)
	}
	f := callFacts{tool: "run_command", isCmd: true, argv: []string{"python3", "x.py"}, cmd: &an}
	if !(Rule{Command: "python3.11"}).denyCommand(f) {
		t.Errorf("deny python3.11 does not match python3 -> python3.11")
	}
	if (&Policy{Allow: []Rule{{Command: "python3.11"}}}).allowCommand(f) != nil {
		t.Errorf("allow python3.11 matched the name python3")
	}
	if (&Policy{Allow: []Rule{{Command: "python3 x.py"}}}).allowCommand(f) == nil {
		t.Errorf("allow python3 x.py did not match")
	}
	// The same file by its path is the PATH program; a copy elsewhere is not.
	an = cmdline.AnalyzeCommand([]string{filepath.Join(bin, "python3"), "x.py"}, cmdline.AnalyzeOptions{Dir: bin, PATH: bin, Resolve: true})
	if !an.Commands[0].OnPath {
		t.Errorf("%s/python3 should be the PATH python3", bin)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "python3"), []byte("#!/bin/sh\n"), 0o755)
	an = cmdline.AnalyzeCommand([]string{"./python3"}, cmdline.AnalyzeOptions{Dir: other, PATH: bin, Resolve: true})
	if an.Commands[0].OnPath {
		t.Errorf("./python3 in another directory counted as the PATH python3")
	}
}

func FuzzAnalyzeCommand(f *testing.F) {
	for _, s := range []string{
		"rm x", "/bin/rm -rf /", "env -i A=1 -- rm", "sudo -u root -- sh -c 'rm x'",
		`sh -c 'f(){ rm x; }; f; echo $(ls) | xargs -0 rm'`, "git -c a=b -C d --no-pager push",
		`bash -lc 'cd /tmp && timeout 5 nice -n 5 rm x'`, `sh -c "sh -c 'sh -c \"rm x\"'"`,
		"find . -exec rm {} ; -ok ls {} +", "watch -n1 'rm x'", "flock l -c 'rm x'",
		`eval 'rm x'`, `sh -c 'trap "rm x" EXIT; eval "$y"'`, "busybox sh -c 'rm x'",
		`zsh -c '=rm x'`, `bash -c $'\x72m'`, `sh -c 'a=$(b=$(c)); d <(e) >f'`,
		"python3 -W ignore -c 'x'", "su - root -c 'id'", "kubectl -n x delete pod y",
		"xargs", "sh -c", "env -S", "timeout", "nice -", "/", ".", "..", "''",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, asScript bool) {
		var argv []string
		if asScript {
			argv = []string{"bash", "-c", s}
		} else {
			argv = strings.Fields(s)
		}
		an := cmdline.AnalyzeCommand(argv, cmdline.AnalyzeOptions{})
		again := cmdline.AnalyzeCommand(argv, cmdline.AnalyzeOptions{})
		if !reflect.DeepEqual(an, again) {
			t.Fatalf("analysis is not deterministic")
		}
		if an.Complete != (len(an.Problems) == 0) {
			t.Fatalf("complete = %v but problems %q", an.Complete, an.Problems)
		}
		if len(an.Commands) > cmdline.MaxCommands {
			t.Fatalf("%d commands, over the limit", len(an.Commands))
		}
		if len(argv) > 0 && an.Complete && len(an.Commands) == 0 {
			t.Fatalf("complete analysis of %q found no command", argv)
		}
		for _, c := range an.Commands {
			if c.Name == "" || strings.Contains(c.Name, "/") || strings.Contains(c.Target, "/") {
				t.Fatalf("bad canonical name %q (target %q)", c.Name, c.Target)
			}
			if c.OnPath && strings.Contains(c.Typed, "/") {
				t.Fatalf("%q typed with a path counted as OnPath without lookups", c.Typed)
			}
		}
		// Every command found is denied by a rule naming it, and the
		// gate's matching never panics on the same input.
		if len(an.Commands) > 0 && len(argv) > 0 {
			c := an.Commands[len(an.Commands)-1]
			fc := callFacts{tool: "run_command", isCmd: true, argv: argv, cmd: &an}
			if !(Rule{Command: shellquoteJoinName(c.Name)}).denyCommand(fc) {
				t.Fatalf("deny %q does not match its own command in %q", c.Name, argv)
			}
			(&Policy{Allow: []Rule{{Command: shellquoteJoinName(c.Name)}}}).allowCommand(fc)
		}
	})
}

func shellquoteJoinName(name string) string { return shellquote.Join(name) }
