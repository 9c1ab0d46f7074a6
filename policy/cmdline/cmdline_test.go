package cmdline

import (
	"reflect"
	"strings"
	"testing"
)

func TestAnalyzeCommand(t *testing.T) {
	type cmd struct {
		name string
		args string
		kind CommandKind
	}
	tests := []struct {
		argv     []string
		want     []cmd
		complete bool
		problem  string // substring of the first problem
	}{
		{[]string{"/bin/rm", "-f", "x"}, []cmd{{"rm", "-f x", KindProgram}}, true, ""},
		{[]string{"env", "-i", "A=1", "nice", "-n", "5", "git", "-C", "d", "push"},
			[]cmd{{"env", "-i A=1 nice -n 5 git -C d push", KindWrapper}, {"nice", "-n 5 git -C d push", KindWrapper}, {"git", "push", KindProgram}}, true, ""},
		{[]string{"sudo", "-u", "root", "ls"}, []cmd{{"sudo", "-u root ls", KindRunner}, {"ls", "", KindProgram}}, true, ""},
		{[]string{"sh", "-c", "cd /tmp && ls | wc -l"}, []cmd{{"sh", "-c 'cd /tmp && ls | wc -l'", KindWrapper}, {"cd", "/tmp", KindBuiltin}, {"ls", "", KindProgram}, {"wc", "-l", KindProgram}}, true, ""},
		{[]string{"sh", "-c", `rm "$f"`}, []cmd{{"sh", `-c 'rm "$f"'`, KindWrapper}, {"rm", `"$f"`, KindProgram}}, true, ""},
		{[]string{"xargs", "rm"}, []cmd{{"xargs", "rm", KindWrapper}, {"rm", "(arguments from input)", KindProgram}}, true, ""},
		{[]string{"sh", "-c", "$CMD x"}, []cmd{{"sh", "-c '$CMD x'", KindWrapper}}, false, "command name $CMD"},
		{[]string{"sh", "x.sh"}, []cmd{{"sh", "x.sh", KindWrapper}}, false, "script file x.sh"},
		{[]string{"sh"}, []cmd{{"sh", "", KindWrapper}}, false, "reads its script from input"},
		{[]string{"bash", "-c", "if then fi ("}, []cmd{{"bash", "-c 'if then fi ('", KindWrapper}}, false, "cannot parse"},
		{[]string{"timeout", "--frob", "5", "rm"}, []cmd{{"timeout", "--frob 5 rm", KindWrapper}}, false, "unknown option --frob"},
		{[]string{"git", "--exec-path=/tmp", "status"}, []cmd{{"git", "status", KindProgram}}, false, "--exec-path"},
		{[]string{"env", "BASH_ENV=./x", "bash", "-c", "true"}, []cmd{{"env", "BASH_ENV=./x bash -c true", KindWrapper}}, false, "sets BASH_ENV"},
		{[]string{"source", "x"}, []cmd{{"source", "x", KindProgram}}, false, "runs a script file"},
		{[]string{"sh", "-c", "echo hi >> out.txt"}, []cmd{{"sh", "-c 'echo hi >> out.txt'", KindWrapper}, {"echo", "hi", KindBuiltin}}, false, "writes out.txt"},
		{[]string{"sh", "-c", "r*m x"}, []cmd{{"sh", "-c 'r*m x'", KindWrapper}}, false, "command name r*m"},
		{[]string{"bash", "-c", "{rm,x}"}, []cmd{{"bash", `-c \{rm,x}`, KindWrapper}}, false, "command name {rm,x}"},
		{[]string{"sh", "-c", "{rm,x}"}, []cmd{{"sh", `-c \{rm,x}`, KindWrapper}, {"{rm,x}", "", KindProgram}}, true, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			an := AnalyzeCommand(tt.argv, AnalyzeOptions{})
			var got []cmd
			for _, c := range an.Commands {
				s := c.String()
				_, args, _ := strings.Cut(s, " ")
				got = append(got, cmd{c.Name, args, c.Kind})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("commands:\n got %+v\nwant %+v", got, tt.want)
			}
			if an.Complete != tt.complete {
				t.Errorf("complete = %v, want %v (problems %q)", an.Complete, tt.complete, an.Problems)
			}
			if tt.problem != "" && (len(an.Problems) == 0 || !strings.Contains(an.Problems[0], tt.problem)) {
				t.Errorf("problems = %q, want one containing %q", an.Problems, tt.problem)
			}
		})
	}
}
