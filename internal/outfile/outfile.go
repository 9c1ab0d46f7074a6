// Package outfile writes records (a line of JSON, an answer) to a file
// tact does not read back: standard output, a trace. A record is one Write.
// When a write fails (a full disk, a reader that went away) the file keeps
// only whole records: on a regular file the partial record is cut off
// again; later writes fail at once with the first error, so a caller
// learns of it on the write that failed and can say so in time.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// Error is a failed write: What names the output ("standard output",
// "--trace out.jsonl").
type Error struct {
	What string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("writing %s: %v", e.What, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Writer is a file written a record at a time. Safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	f       *os.File // nil when w is not a file
	what    string
	regular bool
	err     *Error
	onError func(error)
}

// New writes to w (an *os.File gets partial records cut off when it is a
// regular file). onError, if not nil, is called once, with the first
// error, from the Write that failed.
func New(w io.Writer, what string, onError func(error)) *Writer {
	o := &Writer{w: w, what: what, onError: onError}
	if f, ok := w.(*os.File); ok {
		o.f = f
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			o.regular = true
		}
	}
	return o
}

// Write writes one record whole, or fails and leaves the file as it was
// before it (a regular file; a pipe or terminal cannot take bytes back).
func (o *Writer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	size := int64(-1)
	if o.regular {
		// The size, not the offset: with O_APPEND (>>) the record lands at
		// the end whatever the offset says.
		if st, err := o.f.Stat(); err == nil {
			size = st.Size()
		}
	}
	n, err := o.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err == nil {
		return n, nil
	}
	if n > 0 && size >= 0 && o.f.Truncate(size) == nil {
		n = 0
		if off, serr := o.f.Seek(0, io.SeekCurrent); serr == nil && off > size {
			o.f.Seek(size, io.SeekStart)
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // "write /dev/stdout: ..." says less than What does
	}
	o.err = &Error{What: o.what, Err: err}
	if o.onError != nil {
		o.onError(o.err)
	}
	return n, o.err
}

// Err is the first write error, or nil.
func (o *Writer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		return nil
	}
	return o.err
}
