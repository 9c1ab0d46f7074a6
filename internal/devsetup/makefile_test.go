// Package devsetup holds tests for the repository's developer entry points:
// the Makefile, scripts/install-deps.sh and .ci/run. A newcomer's `make test`
// and `make demo` on a fresh machine must install the system packages before
// anything compiles, and cost nothing once they are in.
package devsetup

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const depsScript = "scripts/install-deps.sh"

// goCommand matches a recipe line that runs the go tool (GO=go is passed).
var goCommand = regexp.MustCompile(`(^|[\s;&|(])go (build|test|run|vet)\b`)

// TestDependencyScriptRunsFirst checks, in a clean clone, that every target
// that compiles cgo calls the dependency script before any go command.
func TestDependencyScriptRunsFirst(t *testing.T) {
	dir := cleanClone(t)
	for _, target := range []string{"build", "test", "demo", "gotest", "test-short", "vet", "warm", "bench", "deps"} {
		t.Run(target, func(t *testing.T) {
			lines := makeDryRun(t, dir, target)
			deps := firstLine(lines, func(l string) bool { return strings.Contains(l, depsScript) })
			if deps < 0 {
				t.Fatalf("make -n %s never calls %s:\n%s", target, depsScript, strings.Join(lines, "\n"))
			}
			if goLine := firstLine(lines, goCommand.MatchString); goLine >= 0 && goLine < deps {
				t.Fatalf("make -n %s runs %q (line %d) before %s (line %d)", target, lines[goLine], goLine+1, depsScript, deps+1)
			}
			if target == "demo" {
				build := firstLine(lines, func(l string) bool { return strings.Contains(l, "go build") && strings.Contains(l, "-o bin/tact") })
				demo := firstLine(lines, func(l string) bool { return strings.Contains(l, "scripts/demo.sh bin/tact") })
				if build < 0 || demo < 0 || demo < build {
					t.Fatalf("make -n demo should build bin/tact, then run scripts/demo.sh:\n%s", strings.Join(lines, "\n"))
				}
			}
		})
	}
}

// TestDependencyCheckIsFree checks that once the stamp is newer than the
// script and dpkg's status file, no target runs the script again, and that a
// later change to the installed packages (dpkg rewrites its status file on
// every install or removal) makes the next build check again.
func TestDependencyCheckIsFree(t *testing.T) {
	dir := cleanClone(t)
	status := filepath.Join(t.TempDir(), "status")
	stamp := filepath.Join(dir, "bin", ".deps-ok")
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{status, stamp} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{status, filepath.Join(dir, depsScript)} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	statusVar := "DPKG_STATUS=" + status
	for _, target := range []string{"build", "test", "demo"} {
		if lines := makeDryRun(t, dir, target, statusVar); firstLine(lines, func(l string) bool { return strings.Contains(l, depsScript) }) >= 0 {
			t.Errorf("make -n %s calls %s although the stamp is up to date:\n%s", target, depsScript, strings.Join(lines, "\n"))
		}
	}

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(status, later, later); err != nil {
		t.Fatal(err)
	}
	if lines := makeDryRun(t, dir, "build", statusVar); firstLine(lines, func(l string) bool { return strings.Contains(l, depsScript) }) < 0 {
		t.Errorf("make -n build does not check again after dpkg's status changed:\n%s", strings.Join(lines, "\n"))
	}
}

// TestCIRunsTestAndDemo checks that CI runs the two commands the README's
// first screen shows.
func TestCIRunsTestAndDemo(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(repoRoot(t), ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"make test", "make demo"} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).Match(ci) {
			t.Errorf(".ci/run has no line %q:\n%s", want, ci)
		}
	}
}

func firstLine(lines []string, match func(string) bool) int {
	for i, l := range lines {
		if match(l) {
			return i
		}
	}
	return -1
}

// makeDryRun returns the commands `make -n target` would run in dir.
func makeDryRun(t *testing.T, dir, target string, vars ...string) []string {
	t.Helper()
	args := append([]string{"-n", "--no-print-directory", "GO=go"}, vars...)
	cmd := exec.Command("make", append(args, target)...)
	cmd.Dir = dir
	// A go test started by make inherits its flags (-n from an outer make -n,
	// jobserver descriptors); the dry run must see none of them.
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// cleanClone clones the repository's HEAD into a temporary directory, as a
// newcomer would, then copies the working tree's Makefile and scripts/ over it
// so that uncommitted edits to them are what gets tested.
func cleanClone(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	root := repoRoot(t)
	if err := exec.Command("git", "-C", root, "rev-parse", "--verify", "-q", "HEAD").Run(); err != nil {
		t.Skipf("%s is not a git checkout with a commit", root)
	}
	dir := filepath.Join(t.TempDir(), "tact")
	if out, err := exec.Command("git", "clone", "-q", root, dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	copyFile(t, filepath.Join(root, "Makefile"), filepath.Join(dir, "Makefile"))
	err := filepath.WalkDir(filepath.Join(root, "scripts"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		copyFile(t, path, filepath.Join(dir, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin")); !os.IsNotExist(err) {
		t.Fatalf("a clean clone has no bin/ (stat: %v)", err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// repoRoot is the directory holding go.mod, above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}
