package atomicfile

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes the test binary a writer that stops between its write
// and its rename (see TestMain), to be killed there.
const helperEnv = "ATOMICFILE_TEST_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		beforeRename = func(string) {
			os.Stdout.WriteString("written\n")
			select {} // wait to be killed
		}
		if err := Write(path, bytes.Repeat([]byte("new content\n"), 100000)); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestWriteModes(t *testing.T) {
	old := syscall.Umask(0o077) // a new file is 0644 whatever the umask
	defer syscall.Umask(old)
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	os.WriteFile(existing, []byte("old"), 0o600)
	os.Chmod(existing, 0o640)
	link := filepath.Join(dir, "link")
	os.Symlink("existing", link)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	cases := []struct {
		name, path, target string
		mode               os.FileMode
		wantErr            bool
	}{
		{name: "new file", path: filepath.Join(dir, "new"), target: filepath.Join(dir, "new"), mode: 0o644},
		{name: "existing file keeps its mode", path: existing, target: existing, mode: 0o640},
		{name: "a link's target is replaced", path: link, target: existing, mode: 0o640},
		{name: "a directory is refused", path: filepath.Join(dir, "sub"), wantErr: true},
		{name: "a missing directory is an error", path: filepath.Join(dir, "none", "f"), wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Write(c.path, []byte("content "+c.name))
			if c.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(c.target)
			st, _ := os.Stat(c.target)
			if string(b) != "content "+c.name || st.Mode().Perm() != c.mode {
				t.Errorf("%q mode %v, want mode %v", b, st.Mode().Perm(), c.mode)
			}
		})
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// A writer killed after its write and before its rename leaves the old
// file whole; the next write replaces it.
func TestKilledBeforeRename(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	old := []byte(`{"old":true}` + "\n")
	os.WriteFile(path, old, 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "written\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	// The new content is on disk in full, beside the old file.
	if b, _ := os.ReadFile(path); !bytes.Equal(b, old) {
		t.Fatalf("before the rename the file holds %d bytes, want the old ones", len(b))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if b, _ := os.ReadFile(path); !bytes.Equal(b, old) {
		t.Fatalf("after the kill the file holds %d bytes, want the old ones", len(b))
	}
	if err := Write(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Fatalf("after a write the file holds %q", b)
	}
}

// TestForeignLinkInStickyDir: in a sticky world-writable directory a link
// is followed only when it and its target are this user's; elsewhere a
// link is followed whoever made it.
func TestForeignLinkInStickyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make links another user owns")
	}
	dir := t.TempDir()
	sticky := filepath.Join(dir, "tmp")
	if err := os.Mkdir(sticky, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	theirs := filepath.Join(dir, "theirs")
	os.WriteFile(theirs, []byte("theirs"), 0o600)
	os.Chown(theirs, 65534, 65534)
	for _, tc := range []struct {
		name, target string
		linkUID      int
		sticky, ok   bool
	}{
		{"their link to mine", victim, 65534, true, false},
		{"my link to theirs", theirs, 0, true, false},
		{"my link to a new file in their dir", filepath.Join(sticky, "new"), 0, true, true},
		{"my link to mine", victim, 0, true, true},
		{"their link, not sticky", victim, 65534, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dir
			if tc.sticky {
				d = sticky
			}
			link := filepath.Join(d, "report.txt")
			os.Remove(link)
			if err := os.Symlink(tc.target, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, tc.linkUID, tc.linkUID); err != nil {
				t.Fatal(err)
			}
			err := Write(link, []byte("new"))
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrForeignLink)) {
				t.Fatalf("Write: %v", err)
			}
			if !tc.ok {
				if b, _ := os.ReadFile(tc.target); string(b) == "new" {
					t.Fatal("the target was replaced")
				}
			}
		})
	}
}
