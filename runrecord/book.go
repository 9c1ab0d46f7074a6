package runrecord

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/tactcli/tact/history"
)

// InputError is a read's error that is the user's to fix: the store's
// path, a damaged or newer store, a run that is not there or not unique,
// or what was asked of it (the engine types it as bad input, exit 2).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputError(err error) error { return &InputError{Err: err} }

func inputErrorf(format string, a ...any) error { return &InputError{Err: fmt.Errorf(format, a...)} }

// Book is the run history opened for reading back records.
type Book struct{ st *history.Store }

// Open opens the run history at path for reading; (nil, nil) when there is
// none yet, which is not created just to be read. A store that cannot be
// opened is an InputError saying what is wrong with its path.
func Open(path func() (string, error)) (*Book, error) {
	p, err := path()
	if err != nil {
		return nil, inputError(err)
	}
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, inputErrorf("run history %s: %v", p, err)
	}
	st, err := history.Open(p, history.Options{})
	if err != nil {
		return nil, inputError(err)
	}
	return &Book{st: st}, nil
}

// Close closes the store; safe on a nil Book.
func (b *Book) Close() error {
	if b == nil {
		return nil
	}
	return b.st.Close()
}

// OpenRun opens the history and finds run (an id, a unique prefix, or
// history.LastRun); the caller closes the Book.
func OpenRun(ctx context.Context, path func() (string, error), run string) (*Book, history.Record, error) {
	b, err := Open(path)
	if err != nil {
		return nil, history.Record{}, err
	}
	if b == nil {
		return nil, history.Record{}, inputErrorf("run %s: no runs recorded yet", strconv.Quote(run))
	}
	rec, err := b.st.Get(ctx, run)
	if err != nil {
		b.Close()
		if errors.Is(err, history.ErrNotFound) {
			if run == history.LastRun {
				return nil, history.Record{}, inputErrorf("run %s: no runs recorded yet", strconv.Quote(run))
			}
			return nil, history.Record{}, inputErrorf("run %s: no such run (tact log lists them)", strconv.Quote(run))
		}
		return nil, history.Record{}, readError(err)
	}
	return b, rec, nil
}

// Newest is a ref that names the newest run in a workspace (as
// history.LastRun does for OpenRunIn): a bare --continue.
const Newest = "newest"

// OpenRunIn opens the history and finds run ref: an id or a unique prefix
// of one, or history.LastRun (Newest too), the newest run in workspace,
// not of any workspace: a `tact serve` client's run, or one in another
// project, is never picked up by accident. what ("resume", "continue") is
// for the message when there is none. The caller closes the Book.
func OpenRunIn(ctx context.Context, path func() (string, error), ref, workspace, what string) (*Book, history.Record, error) {
	if ref != history.LastRun && ref != Newest {
		return OpenRun(ctx, path, ref)
	}
	ws, err := WorkspaceKey(workspace)
	if err != nil {
		return nil, history.Record{}, inputErrorf("--workspace: %v", err)
	}
	b, err := Open(path)
	if err != nil {
		return nil, history.Record{}, err
	}
	var rec history.Record
	if b != nil {
		rec, err = b.st.Last(ctx, ws)
	}
	if b == nil || errors.Is(err, history.ErrNotFound) {
		b.Close()
		return nil, history.Record{}, inputErrorf("no run in %s to %s (last is the newest run in this workspace; tact log lists the runs, an id names one)", ws, what)
	} else if err != nil {
		b.Close()
		return nil, history.Record{}, readError(err)
	}
	return b, rec, nil
}

// List lists the runs f selects, newest first.
func (b *Book) List(ctx context.Context, f history.Filter) ([]history.Record, error) {
	recs, err := b.st.List(ctx, f)
	return recs, readError(err)
}

// Events calls each with the run's trace lines, in order.
func (b *Book) Events(ctx context.Context, runID string, each func(line string) error) error {
	return readError(b.st.Events(ctx, runID, each))
}

// readError is a read's error: what is wrong with the store or the
// request is an InputError; anything else (an I/O error, or each's own
// error) is returned as it is.
func readError(err error) error {
	var amb *history.AmbiguousError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &amb), errors.Is(err, history.ErrNotFound), errors.Is(err, history.ErrCorrupt),
		errors.Is(err, history.ErrUnsafePath), errors.Is(err, history.ErrNewerSchema):
		return inputError(err)
	}
	return err
}
