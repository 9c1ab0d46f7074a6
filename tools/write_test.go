package tools

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// twStatT returns the raw status of path (not following a final symlink).
func twStatT(t testing.TB, path string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func twRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func twRequireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (to chown files to another user)")
	}
}

// A file another user owns keeps its owner, group and mode when root edits
// or rewrites it, and is still replaced atomically (a new inode).
func TestWriteKeepsOwnerGroupModeAsRoot(t *testing.T) {
	twRequireRoot(t)
	env, _ := twLayout(t)
	ws := env.Workspace
	for _, tc := range []struct {
		name string
		mode os.FileMode // for os.Chmod
		perm uint32      // the st_mode bits to find afterwards
	}{
		{"plain.txt", 0o640, 0o640},
		{"setgid.sh", 0o750 | os.ModeSetgid, 0o2750},
		{"readonly.txt", 0o444, 0o444}, // root may write it, as with any tool
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(ws, tc.name)
			twWrite(t, p, "old line\n")
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			before := twStatT(t, p)
			// Holding the old inode open keeps the file system from reusing
			// its number for the next temp file.
			old, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			res := twRun(t, EditFile{}, env, m{"path": tc.name, "old_string": "old", "new_string": "edited"})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			res = twRun(t, WriteFile{}, env, m{"path": tc.name, "content": twRead(t, p) + "more\n"})
			if res.Err != nil || res.Output != "overwrote "+tc.name+" (17 bytes)" {
				t.Fatalf("write_file: %q, %v", res.Output, res.Err)
			}
			if got := twRead(t, p); got != "edited line\nmore\n" {
				t.Fatalf("content %q", got)
			}
			st := twStatT(t, p)
			if st.Uid != 65534 || st.Gid != 65534 || st.Mode&0o7777 != tc.perm {
				t.Errorf("after edit: %d:%d %o, want 65534:65534 %o", st.Uid, st.Gid, st.Mode&0o7777, tc.perm)
			}
			if st.Ino == before.Ino {
				t.Errorf("inode unchanged: the file was written in place, want an atomic replace")
			}
			twNoTempFiles(t, ws)
		})
	}
}

// Every name of a hard-linked file sees the new content: the file is
// written in place, not replaced by a new inode under one name.
func TestWriteHardLinkedFileInPlace(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	a, b := filepath.Join(ws, "a.txt"), filepath.Join(ws, "dir", "b.txt")
	twWrite(t, a, "version 1 is long\n")
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	ino := twStatT(t, a).Ino
	if res := twRun(t, WriteFile{}, env, m{"path": "a.txt", "content": "v2\n"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := twRead(t, b); got != "v2\n" {
		t.Fatalf("other link after write_file: %q, want %q", got, "v2\n")
	}
	res := twRun(t, EditFile{}, env, m{"path": "dir/b.txt", "old_string": "v2", "new_string": "version 3"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := twRead(t, a); got != "version 3\n" {
		t.Fatalf("other link after edit_file: %q, want %q", got, "version 3\n")
	}
	for _, p := range []string{a, b} {
		if st := twStatT(t, p); st.Ino != ino || st.Nlink != 2 {
			t.Errorf("%s: inode %d nlink %d, want inode %d nlink 2", p, st.Ino, st.Nlink, ino)
		}
	}
	twNoTempFiles(t, ws)
}

// A write through a symlink inside the workspace changes the link's target
// and leaves the link a link.
func TestWriteThroughFileSymlinkKeepsLink(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	if err := os.Symlink("dir/file.txt", filepath.Join(ws, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	// An absolute link that stays inside works too.
	if err := os.Symlink(filepath.Join(ws, "dir", "file.txt"), filepath.Join(ws, "absalias.txt")); err != nil {
		t.Fatal(err)
	}
	res := twRun(t, WriteFile{}, env, m{"path": "alias.txt", "content": "hello\nworld\n"})
	if res.Err != nil || res.Output != "overwrote dir/file.txt (12 bytes)" {
		t.Fatalf("write_file: %q, %v", res.Output, res.Err)
	}
	res = twRun(t, EditFile{}, env, m{"path": "absalias.txt", "old_string": "world", "new_string": "there"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := twRead(t, filepath.Join(ws, "dir", "file.txt")); got != "hello\nthere\n" {
		t.Fatalf("target = %q", got)
	}
	for _, l := range []string{"alias.txt", "absalias.txt"} {
		if st := twStatT(t, filepath.Join(ws, l)); st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
			t.Errorf("%s is no longer a symlink", l)
		}
	}
	if res := twRun(t, ReadFile{}, env, m{"path": "absalias.txt"}); res.Output != "hello\nthere\n" {
		t.Errorf("read_file through an absolute symlink inside: %q, %v", res.Output, res.Err)
	}
}

// Extended attributes (user attributes here; ACLs and labels are
// attributes too) survive the atomic replace.
func TestWriteKeepsXattrs(t *testing.T) {
	env, _ := twLayout(t)
	p := filepath.Join(env.Workspace, "tagged.txt")
	twWrite(t, p, "one\n")
	if err := unix.Setxattr(p, "user.tact.test", []byte("kept"), 0); err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			t.Skip("file system without user xattrs")
		}
		t.Fatal(err)
	}
	if res := twRun(t, EditFile{}, env, m{"path": "tagged.txt", "old_string": "one", "new_string": "two"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(p, "user.tact.test", buf)
	if err != nil {
		t.Fatalf("xattr lost in the edit: %v", err)
	}
	if string(buf[:n]) != "kept" {
		t.Fatalf("xattr after edit = %q, want %q", buf[:n], "kept")
	}
	if got := twRead(t, p); got != "two\n" {
		t.Fatalf("content %q", got)
	}
}

// nobodyEnv names the workspace for TestAsNobodyHelper, run by
// TestWriteAsOrdinaryUser in a child process with uid and gid 65534.
const nobodyEnv = "TACT_TEST_NOBODY_WORKSPACE"

type nobodyCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

type nobodyResult struct {
	Output string `json:"output"`
	Err    string `json:"err"`
}

// TestAsNobodyHelper is not a test by itself: it runs the file-tool calls
// it is given as JSON on stdin in the workspace named by nobodyEnv and
// prints their results as JSON.
func TestAsNobodyHelper(t *testing.T) {
	ws := os.Getenv(nobodyEnv)
	if ws == "" {
		t.Skip("helper for TestWriteAsOrdinaryUser")
	}
	var calls []nobodyCall
	if err := json.NewDecoder(os.Stdin).Decode(&calls); err != nil {
		t.Fatal(err)
	}
	env, err := NewEnv(ws)
	if err != nil {
		t.Fatal(err)
	}
	reg := DefaultRegistry()
	var out []nobodyResult
	for _, c := range calls {
		tool, ok := reg.Get(c.Tool)
		if !ok {
			t.Fatalf("no tool %q", c.Tool)
		}
		res := twRun(t, tool, env, string(c.Args))
		r := nobodyResult{Output: res.Output}
		if res.Err != nil {
			r.Err = res.Err.Error()
		}
		out = append(out, r)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		t.Fatal(err)
	}
}

// As an ordinary user: a read-only file is refused even in a writable
// directory; a group-writable file someone else owns is written in place
// and keeps its owner; the user's own file is replaced and stays theirs.
func TestWriteAsOrdinaryUser(t *testing.T) {
	twRequireRoot(t)
	// Everything the child touches must be reachable by uid 65534, so the
	// directory is not t.TempDir (0700 under a 0700 parent).
	base, err := os.MkdirTemp("", "tact-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// The test binary may sit in a private build directory: run a copy.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "tools.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	files := []struct {
		name     string
		uid, gid int
		mode     os.FileMode
	}{
		{"readonly.txt", 65534, 65534, 0o444},
		{"rootsfile.txt", 0, 0, 0o644},
		{"group.txt", 0, 65534, 0o664},
		{"own.txt", 65534, 65534, 0o600},
		{"writeonly.txt", 65534, 65534, 0o200},
	}
	for _, f := range files {
		p := filepath.Join(ws, f.name)
		twWrite(t, p, "original\n")
		if err := os.Chown(p, f.uid, f.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(ws, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	inode := map[string]uint64{}
	for _, f := range files {
		inode[f.name] = twStatT(t, filepath.Join(ws, f.name)).Ino
	}

	type want struct {
		err    string // substring of the error; "" means success
		output string
	}
	calls := []struct {
		tool string
		args m
		want want
	}{
		{"write_file", m{"path": "readonly.txt", "content": "x"}, want{err: "readonly.txt is not writable by this user (uid 65534): permission denied; it was left unchanged"}},
		{"edit_file", m{"path": "readonly.txt", "old_string": "original", "new_string": "x"}, want{err: "readonly.txt is not writable by this user (uid 65534)"}},
		{"write_file", m{"path": "rootsfile.txt", "content": "x"}, want{err: "rootsfile.txt is not writable by this user"}},
		{"edit_file", m{"path": "group.txt", "old_string": "original", "new_string": "by group"}, want{output: "edited group.txt: replaced 1 occurrence at line 1 (9 -> 9 bytes)"}},
		{"write_file", m{"path": "own.txt", "content": "mine\n"}, want{output: "overwrote own.txt (5 bytes)"}},
		{"write_file", m{"path": "writeonly.txt", "content": "blind\n"}, want{output: "overwrote writeonly.txt (6 bytes)"}},
		{"edit_file", m{"path": "writeonly.txt", "old_string": "blind", "new_string": "x"}, want{err: "edit_file: writeonly.txt: permission denied"}},
		{"write_file", m{"path": "new/created.txt", "content": "new\n"}, want{output: "created new/created.txt (4 bytes)"}},
	}
	var in []nobodyCall
	for _, c := range calls {
		b, _ := json.Marshal(c.args)
		in = append(in, nobodyCall{Tool: c.tool, Args: b})
	}
	stdin, _ := json.Marshal(in)
	cmd := exec.Command(bin, "-test.run=^TestAsNobodyHelper$", "-test.count=1")
	cmd.Dir = base
	cmd.Env = append(os.Environ(), nobodyEnv+"="+ws)
	cmd.Stdin = strings.NewReader(string(stdin))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper as nobody: %v\n%s", err, out)
	}
	// The JSON line is followed by the test framework's PASS line.
	line, _, _ := strings.Cut(string(out), "\n")
	var results []nobodyResult
	if err := json.Unmarshal([]byte(line), &results); err != nil || len(results) != len(calls) {
		t.Fatalf("helper output %q: %v", out, err)
	}
	for i, c := range calls {
		r := results[i]
		if c.want.err != "" {
			if !strings.Contains(r.Err, c.want.err) {
				t.Errorf("%s %v: err %q, want it to contain %q", c.tool, c.args, r.Err, c.want.err)
			}
			continue
		}
		if r.Err != "" || r.Output != c.want.output {
			t.Errorf("%s %v: %q, %q; want %q", c.tool, c.args, r.Output, r.Err, c.want.output)
		}
	}

	for _, tc := range []struct {
		name      string
		content   string
		uid, gid  uint32
		perm      uint32
		sameInode bool
	}{
		{"readonly.txt", "original\n", 65534, 65534, 0o444, true},
		{"rootsfile.txt", "original\n", 0, 0, 0o644, true},
		{"group.txt", "by group\n", 0, 65534, 0o664, true}, // in place: nobody cannot chown to root
		{"own.txt", "mine\n", 65534, 65534, 0o600, false},  // atomic replace
		{"writeonly.txt", "blind\n", 65534, 65534, 0o200, false},
	} {
		p := filepath.Join(ws, tc.name)
		st := twStatT(t, p)
		if got := twRead(t, p); got != tc.content {
			t.Errorf("%s = %q, want %q", tc.name, got, tc.content)
		}
		if st.Uid != tc.uid || st.Gid != tc.gid || st.Mode&0o7777 != tc.perm {
			t.Errorf("%s: %d:%d %o, want %d:%d %o", tc.name, st.Uid, st.Gid, st.Mode&0o7777, tc.uid, tc.gid, tc.perm)
		}
		if (st.Ino == inode[tc.name]) != tc.sameInode {
			t.Errorf("%s: same inode = %v, want %v", tc.name, st.Ino == inode[tc.name], tc.sameInode)
		}
	}
	if st := twStatT(t, filepath.Join(ws, "new", "created.txt")); st.Uid != 65534 {
		t.Errorf("new file owned by %d, want 65534", st.Uid)
	}
	twNoTempFiles(t, ws)
}

// Go's os.Root reports a path leading out with an unexported error; tact
// recognises it by its text, which this test pins to the Go in use.
func TestRootEscapeDetected(t *testing.T) {
	env, _ := twLayout(t)
	root, err := os.OpenRoot(env.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"../x", "link_out/secret", "abs_out"} {
		_, err := root.Open(name)
		if !isRootEscape(err) {
			t.Errorf("Root.Open(%q) = %v, not recognised as an escape", name, err)
		}
		if got := pathFail(name, err).Error(); got != escapeError(name).Error() {
			t.Errorf("pathFail = %q", got)
		}
	}
	_, err = root.Open("nope")
	if isRootEscape(err) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file is not an escape: %v", err)
	}
}

// Linux refuses to open a running program for writing (ETXTBSY). Such a
// file is still replaced by rename when that keeps everything; with a second
// hard link it cannot be, and the write is refused with the reason.
func TestWriteRunningProgram(t *testing.T) {
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	env, _ := twLayout(t)
	ws := env.Workspace
	prog, linked := filepath.Join(ws, "prog"), filepath.Join(ws, "linked")
	bin, err := os.ReadFile(sleepBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{prog, linked} {
		if err := os.WriteFile(p, bin, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(linked, linked+".2"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{prog, linked} {
		cmd := exec.Command(p, "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	if f, err := os.OpenFile(prog, os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Skip("this kernel lets a running program be opened for writing")
	} else if !errors.Is(err, syscall.ETXTBSY) {
		t.Fatalf("open running program: %v", err)
	}
	res := twRun(t, WriteFile{}, env, m{"path": "prog", "content": "#!/bin/sh\n"})
	if res.Err != nil || res.Output != "overwrote prog (10 bytes)" {
		t.Fatalf("write_file on a running program: %q, %v", res.Output, res.Err)
	}
	if got := twRead(t, prog); got != "#!/bin/sh\n" {
		t.Fatalf("prog = %q", got)
	}
	if st := twStatT(t, prog); st.Mode&0o7777 != 0o755 {
		t.Errorf("prog mode %o, want 755", st.Mode&0o7777)
	}
	res = twRun(t, WriteFile{}, env, m{"path": "linked", "content": "x"})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "linked is a running program (text file busy) and must be written in place because it has 2 hard links") {
		t.Fatalf("write_file on a hard-linked running program: %q, %v", res.Output, res.Err)
	}
	if got := twRead(t, linked+".2"); got != string(bin) {
		t.Errorf("the refused write changed the file")
	}
	twNoTempFiles(t, ws)
}
