package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultListLimit is List's limit when Filter.Limit is 0.
const DefaultListLimit = 20

// recordColumns are the runs columns scanRecord reads, in order.
const recordColumns = `id, parent_id, resumed_from, command, workspace, query, plan, backend, model, settings, started_at,
ended_at, answer, reason, exit_code, prompt_tokens, completion_tokens, cached_tokens, steps, duration_ns, result, dropped_events`

// newestFirst orders runs newest first; seq breaks ties between runs
// started in the same nanosecond (and follows insertion order).
const newestFirst = ` ORDER BY started_at DESC, seq DESC`

func scanRecord(row interface{ Scan(...any) error }) (Record, error) {
	var (
		r                 Record
		started, duration int64
		ended, exit       sql.NullInt64
		reason            sql.NullString
	)
	err := row.Scan(&r.ID, &r.ParentID, &r.ResumedFrom, &r.Command, &r.Workspace, &r.Query, &r.Plan, &r.Backend, &r.Model,
		&r.Settings, &started, &ended, &r.Answer, &reason, &exit, &r.Usage.Prompt, &r.Usage.Completion, &r.Usage.Cached,
		&r.Steps, &duration, &r.Result, &r.DroppedEvents)
	if err != nil {
		return Record{}, err
	}
	r.StartedAt = fromUnixNano(started)
	r.Duration = timeDuration(duration)
	r.Ended = ended.Valid
	if r.Ended {
		r.EndedAt = fromUnixNano(ended.Int64)
		r.Reason = reason.String
		r.ExitCode = int(exit.Int64)
	} else {
		r.Reason = ReasonInterrupted
	}
	return r, nil
}

// List returns the runs f selects, newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Record, error) {
	if s == nil {
		return nil, ErrClosed
	}
	var (
		where []string
		args  []any
	)
	if !f.Since.IsZero() {
		where, args = append(where, "started_at >= ?"), append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "started_at < ?"), append(args, f.Until.UnixNano())
	}
	if f.Reason != "" {
		where, args = append(where, "coalesce(reason, ?) = ?"), append(args, ReasonInterrupted, f.Reason)
		if f.Reason == "needs_input" {
			// What waits: a paused run that tact answer went on with
			// is done waiting.
			where = append(where, "NOT EXISTS (SELECT 1 FROM runs AS a WHERE a.resumed_from = runs.id)")
		}
	}
	if f.Exit != nil {
		where, args = append(where, "exit_code = ?"), append(args, *f.Exit)
	}
	if f.Workspace != "" {
		where, args = append(where, "workspace = ?"), append(args, f.Workspace)
	}
	if match, ok := ftsMatch(f.Query); ok { // blank text does not filter
		where = append(where, "seq IN (SELECT rowid >> 20 FROM run_fts WHERE run_fts MATCH ?)")
		args = append(args, match)
	}
	q := "SELECT " + recordColumns + " FROM runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += newestFirst
	limit := f.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, classify(s.path, "list runs", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, classify(s.path, "list runs", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(s.path, "list runs", err)
	}
	rows.Close()
	for i := range out {
		s.expandRecord(ctx, &out[i])
	}
	return out, nil
}

// LastRun is the id Get reads as the newest run.
const LastRun = "last"

// Get returns the run whose id is idOrPrefix, else the one run whose id
// starts with it (several: *AmbiguousError); LastRun is the newest run.
func (s *Store) Get(ctx context.Context, idOrPrefix string) (Record, error) {
	if s == nil {
		return Record{}, ErrClosed
	}
	if idOrPrefix == "" {
		return Record{}, fmt.Errorf("%w: empty run id", ErrNotFound)
	}
	if idOrPrefix == LastRun {
		return s.one(ctx, "newest run", "SELECT "+recordColumns+" FROM runs"+newestFirst+" LIMIT 1")
	}
	r, err := s.one(ctx, "run "+idOrPrefix, "SELECT "+recordColumns+" FROM runs WHERE id = ?", idOrPrefix)
	if !errors.Is(err, ErrNotFound) {
		return r, err
	}
	// Ids under a prefix form one range of the unique index: no byte of
	// valid UTF-8 is 0xff, so prefix+"\xff" is above every id that starts
	// with prefix.
	var n int
	err = s.db.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE id > ? AND id < ?", idOrPrefix, idOrPrefix+"\xff").Scan(&n)
	if err != nil {
		return Record{}, classify(s.path, "find run "+idOrPrefix, err)
	}
	switch {
	case n == 0:
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, idOrPrefix)
	case n > 1:
		return Record{}, &AmbiguousError{Prefix: idOrPrefix, Count: n}
	}
	return s.one(ctx, "run "+idOrPrefix, "SELECT "+recordColumns+" FROM runs WHERE id > ? AND id < ?", idOrPrefix, idOrPrefix+"\xff")
}

// Checkpoint returns the latest checkpoint of the run whose id is runID
// ("" when it has none: it succeeded, or no step finished).
func (s *Store) Checkpoint(ctx context.Context, runID string) (string, error) {
	if s == nil {
		return "", ErrClosed
	}
	var cp string
	err := s.db.QueryRowContext(ctx, "SELECT checkpoint FROM runs WHERE id = ?", runID).Scan(&cp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	if err != nil {
		return "", classify(s.path, "read the checkpoint of run "+runID, err)
	}
	return s.expandText(ctx, cp), nil
}

// Last returns the newest run in workspace (for --continue).
func (s *Store) Last(ctx context.Context, workspace string) (Record, error) {
	if s == nil {
		return Record{}, ErrClosed
	}
	return s.one(ctx, "newest run in "+workspace, "SELECT "+recordColumns+" FROM runs WHERE workspace = ?"+newestFirst+" LIMIT 1", workspace)
}

func (s *Store) one(ctx context.Context, what, q string, args ...any) (Record, error) {
	r, err := scanRecord(s.db.QueryRowContext(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	if err != nil {
		return Record{}, classify(s.path, "read "+what, err)
	}
	s.expandRecord(ctx, &r)
	return r, nil
}

// expandRecord puts the blobs back into a record's plan and result.
func (s *Store) expandRecord(ctx context.Context, r *Record) {
	r.Plan, r.Result = s.expandText(ctx, r.Plan), s.expandText(ctx, r.Result)
}

// seqOf is the run's row number, or ErrNotFound.
func (s *Store) seqOf(ctx context.Context, runID string) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, "SELECT seq FROM runs WHERE id = ?", runID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: %q", ErrNotFound, runID)
	}
	if err != nil {
		return 0, classify(s.path, "find run "+runID, err)
	}
	return seq, nil
}

// Steps returns the stored steps of the run with id runID (a full id, as in
// Record.ID), in index order.
func (s *Store) Steps(ctx context.Context, runID string) ([]Step, error) {
	if s == nil {
		return nil, ErrClosed
	}
	seq, err := s.seqOf(ctx, runID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT idx, thought, tool, args, decision, observation, exit_code, started_at, duration_ns,
prompt_tokens, completion_tokens, cached_tokens FROM steps WHERE run = ? ORDER BY idx`, seq)
	if err != nil {
		return nil, classify(s.path, "read steps of "+runID, err)
	}
	defer rows.Close()
	var out []Step
	for rows.Next() {
		var (
			p                 Step
			started, duration int64
		)
		if err := rows.Scan(&p.Index, &p.Thought, &p.Tool, &p.Args, &p.Decision, &p.Observation, &p.ExitCode, &started, &duration,
			&p.Usage.Prompt, &p.Usage.Completion, &p.Usage.Cached); err != nil {
			return nil, classify(s.path, "read steps of "+runID, err)
		}
		p.StartedAt, p.Duration = fromUnixNano(started), timeDuration(duration)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(s.path, "read steps of "+runID, err)
	}
	for i := range out {
		out[i].Args = s.expandText(ctx, out[i].Args)
	}
	return out, nil
}

// Events calls each with the run's trace event lines in the order they were
// recorded, stopping at the first error each returns (which Events returns).
func (s *Store) Events(ctx context.Context, runID string, each func(line string) error) error {
	if s == nil {
		return ErrClosed
	}
	seq, err := s.seqOf(ctx, runID)
	if err != nil {
		return err
	}
	rows, err := s.db.QueryContext(ctx, "SELECT line FROM events WHERE run = ? ORDER BY id", seq)
	if err != nil {
		return classify(s.path, "read trace of "+runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return classify(s.path, "read trace of "+runID, err)
		}
		if err := each(s.expandText(ctx, line)); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return classify(s.path, "read trace of "+runID, err)
	}
	return nil
}

func timeDuration(ns int64) time.Duration { return time.Duration(ns) }
