package suiterun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tactcli/tact/testsuite"
)

// maxCaseFile caps the case file record reads to find the names it has
// (testsuite.Load reads at most 16 MiB of one).
const maxCaseFile = 64 << 20

// suiteDir is the suite a record writes into, opened as an os.Root: no
// path is followed out of it, and nothing but a regular file is read or
// appended to (a FIFO would block, a device is no case file).
type suiteDir struct {
	root *os.Root
	path string // as given, for names in messages
}

// rel is p (the suite's path joined with a name) relative to the suite.
func (d *suiteDir) rel(p string) string {
	r, err := filepath.Rel(d.path, p)
	if err != nil {
		return p // never: every path here is made from d.path
	}
	return r
}

// wrap names p in an error of the suite's root: a link that leads out of
// the suite says so.
func (d *suiteDir) wrap(p string, err error) error {
	if strings.HasSuffix(err.Error(), "path escapes from parent") { // os.Root's error, not exported
		return fmt.Errorf("%s: a link on the path leads out of the suite %s: not written through", p, d.path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", p, pe.Err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// openRegular opens a file of the suite that must be a regular file, never
// blocking on a FIFO.
func (d *suiteDir) openRegular(p string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := d.root.OpenFile(d.rel(p), flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, d.wrap(p, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return f, nil
}

// lock takes the suite's lock file (.tact-record.lock, not a case file:
// it does not end in .jsonl), waiting for another record.
func (d *suiteDir) lock() (func(), error) {
	f, err := d.openRegular(filepath.Join(d.path, ".tact-record.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--suite %s: %w", d.path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--suite %s: lock: %w", d.path, err)
	}
	return func() { f.Close() }, nil
}

func (d *suiteDir) mkdirAll(p string) error {
	if err := d.root.MkdirAll(d.rel(p), 0o755); err != nil {
		return d.wrap(p, err)
	}
	return nil
}

// writeNew writes a file that must not exist yet, making its folder.
func (d *suiteDir) writeNew(p string, perm fs.FileMode, fill func(*bytes.Buffer) error) error {
	var b bytes.Buffer
	if err := fill(&b); err != nil {
		return err
	}
	if err := d.mkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	f, err := d.root.OpenFile(d.rel(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return d.wrap(p, err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return d.wrap(p, err)
	}
	return f.Close()
}

// appendLine appends line to the case file, made when missing. A file
// whose last line has no newline (edited by hand) gets one first, so the
// new case is a line of its own, not glued to the last one.
func (d *suiteDir) appendLine(p string, line []byte) error {
	f, err := d.openRegular(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkNew refuses a name the suite has already, and a case file that is
// no regular file.
func checkNew(d *suiteDir, out *Recorded, o RecordOptions) error {
	f, err := d.openRegular(out.CaseFile, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		data, err := io.ReadAll(io.LimitReader(f, maxCaseFile+1))
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", out.CaseFile, err)
		}
		if len(data) > maxCaseFile {
			return fmt.Errorf("%s: larger than the %d MiB cap", out.CaseFile, maxCaseFile>>20)
		}
		for _, c := range testsuite.ParseCases(out.CaseFile, data) {
			if c.Name == o.Name {
				return fmt.Errorf("%s: case %q exists already (--name)", c.Where(), o.Name)
			}
		}
	}
	for _, p := range []string{out.Fixture, out.Cassette, filepath.Join(o.Suite, "plans", o.Name+".jsonl"), filepath.Join(o.Suite, "schemas", o.Name+".json")} {
		if _, err := d.root.Lstat(d.rel(p)); err == nil {
			return fmt.Errorf("%s exists already: choose another --name or remove it", p)
		}
	}
	return nil
}
