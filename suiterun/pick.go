package suiterun

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/runrecord"
)

// trialCommand is the command a suite's trials are kept under in the
// run history.
const trialCommand = "test"

// pickWindow is how many of the newest runs "last" looks through for one
// that is not a trial: a suite of many cases and trials leaves that many.
const pickWindow = 10000

// OpenRun opens the run history at path and finds the run to record: ref
// as runrecord.OpenRun takes it (an id, a unique prefix), except that
// "last" is the newest run that is not a trial of tact test run. A suite
// run after the run worth keeping leaves its trials in the history, and
// recording one of those (a replay of a case) is never what "last" means;
// a trial is still recorded by its id. The caller closes the Book.
func OpenRun(ctx context.Context, path func() (string, error), ref string) (*runrecord.Book, history.Record, error) {
	if ref != history.LastRun {
		return runrecord.OpenRun(ctx, path, ref)
	}
	book, err := runrecord.Open(path)
	if err != nil {
		return nil, history.Record{}, err
	}
	if book == nil {
		return nil, history.Record{}, &runrecord.InputError{Err: fmt.Errorf("run %s: no runs recorded yet", strconv.Quote(ref))}
	}
	recs, err := book.List(ctx, history.Filter{Limit: pickWindow})
	if err != nil {
		book.Close()
		return nil, history.Record{}, err
	}
	for _, r := range recs {
		if r.Command != trialCommand {
			return book, r, nil
		}
	}
	book.Close()
	if len(recs) == 0 {
		return nil, history.Record{}, &runrecord.InputError{Err: fmt.Errorf("run %s: no runs recorded yet", strconv.Quote(ref))}
	}
	return nil, history.Record{}, &runrecord.InputError{Err: fmt.Errorf("run %s: the newest %d runs are all tact test trials, which last skips: name the run by its id (tact log lists them)", strconv.Quote(ref), len(recs))}
}
