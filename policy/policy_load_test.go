package policy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Regression (issue 23, items 8 and 9): --policy /dev/zero grew memory
// without limit and a FIFO blocked the load in open(2) for ever. Both, and
// a policy past its cap, are refused at once in one line; so is a FIFO
// where the "always allow" answer rewrites the file.
func TestLoadPolicyRefusesOtherKinds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "policy.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"allow": [`+strings.Repeat(" ", 1<<20)+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "policy /dev/zero: is a character device, not a regular file",
		fifo:        "policy " + fifo + ": is a named pipe (FIFO), not a regular file",
		dir:         "policy " + dir + ": is a directory, not a regular file",
		big:         "policy " + big + ": larger than the 1 MiB cap",
	} {
		done := make(chan [2]error, 1)
		go func() {
			_, err := LoadPolicy(path)
			errs := [2]error{err, err}
			if strings.HasPrefix(path, dir+"/") { // AppendRule makes PATH.lock beside it
				errs[1] = AppendRule(path, Rule{Tool: "write_file"})
			}
			done <- errs
		}()
		select {
		case errs := <-done:
			for i, err := range errs {
				if err == nil || err.Error() != want {
					t.Errorf("%s (%s): %v, want %q", path, []string{"LoadPolicy", "AppendRule"}[i], err, want)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still blocked after 5s", path)
		}
	}
}

// The lock file beside the policy is opened without blocking too: a FIFO
// planted there is refused, not opened for writing.
func TestAppendRuleLockFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := syscall.Mkfifo(path+".lock", 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- AppendRule(path, Rule{Tool: "write_file"}) }()
	select {
	case err := <-done:
		if want := "policy lock " + path + ".lock: is a named pipe (FIFO), not a regular file"; err == nil || err.Error() != want {
			t.Fatalf("%v, want %q", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still blocked after 5s")
	}
}
