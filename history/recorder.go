package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Recorder records one run. Its methods never block and never fail: they
// queue the record for the store's writer goroutine, which commits each step
// as it arrives. When the queue is full trace events are dropped first (from
// 3/4 full), then steps (from 15/16), and the drops are counted. After a
// store error nothing more is written. A nil *Recorder accepts every call.
type Recorder struct {
	s             *Store
	id            string
	droppedEvents atomic.Int64
}

// Drops counts what recorders dropped because the queue was full.
type Drops struct {
	Events int64
	Steps  int64
	Runs   int64 // Begin or End calls
}

type dropCounters struct{ events, steps, runs atomic.Int64 }

type opKind uint8

const (
	opBegin opKind = iota
	opStep
	opEvent
	opEnd
	opFlush
	opCheckpoint
)

type op struct {
	kind  opKind
	rec   *Recorder
	run   Run
	step  Step
	line  string
	final Final
	// dropped is the run's dropped-event count at End.
	dropped int64
	done    chan struct{} // opFlush
}

// maxBatch bounds the operations one write transaction commits: a batch is
// whatever was queued when the writer got to it, so a lone step commits at
// once and a burst shares one commit.
const maxBatch = 256

// Begin starts recording run and returns its Recorder. A zero StartedAt is
// now.
func (s *Store) Begin(run Run) *Recorder {
	if s == nil {
		return nil
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = s.opts.Now()
	}
	r := &Recorder{s: s, id: run.ID}
	if !s.enqueue(op{kind: opBegin, rec: r, run: run}, cap(s.ops)) {
		s.drops.runs.Add(1)
	}
	return r
}

// ID is the run's id.
func (r *Recorder) ID() string {
	if r == nil {
		return ""
	}
	return r.id
}

// Step records a finished step.
func (r *Recorder) Step(step Step) {
	if r == nil {
		return
	}
	r.enqueueStep(op{kind: opStep, rec: r, step: step})
}

// enqueueStep queues a step or a checkpoint: they may take all but the
// last sixteenth of the queue (trace events give way first), and one that
// does not fit counts as a dropped step.
func (r *Recorder) enqueueStep(o op) {
	c := cap(r.s.ops)
	if !r.s.enqueue(o, c-c/16) {
		r.s.drops.steps.Add(1)
	}
}

// Event records one trace event line (JSONL, opaque).
func (r *Recorder) Event(line string) {
	if r == nil {
		return
	}
	if !r.s.enqueue(op{kind: opEvent, rec: r, line: line}, cap(r.s.ops)*3/4) {
		r.s.drops.events.Add(1)
		r.droppedEvents.Add(1)
	}
}

// Checkpoint records the run's latest checkpoint (opaque JSON), replacing
// the one before; Store.Flush waits for it to be committed.
func (r *Recorder) Checkpoint(data string) {
	if r == nil {
		return
	}
	r.enqueueStep(op{kind: opCheckpoint, rec: r, line: data})
}

// End records how the run ended. A zero EndedAt is now. Calls after End are
// ignored by the writer.
func (r *Recorder) End(final Final) {
	if r == nil {
		return
	}
	if final.EndedAt.IsZero() {
		final.EndedAt = r.s.opts.Now()
	}
	if !r.s.enqueue(op{kind: opEnd, rec: r, final: final, dropped: r.droppedEvents.Load()}, cap(r.s.ops)) {
		r.s.drops.runs.Add(1)
	}
}

// enqueue queues o unless the queue holds limit operations or more, and
// reports whether it did; after Close or a store error it drops silently.
func (s *Store) enqueue(o op, limit int) bool {
	if s.closed.Load() || s.fatal.Load() != nil {
		return true
	}
	if len(s.ops) >= limit {
		return false
	}
	select {
	case s.ops <- o:
		return true
	default:
		return false
	}
}

// Dropped counts what the recorders dropped because the queue was full.
func (s *Store) Dropped() Drops {
	if s == nil {
		return Drops{}
	}
	return Drops{Events: s.drops.events.Load(), Steps: s.drops.steps.Load(), Runs: s.drops.runs.Load()}
}

// Flush waits until everything queued before it is written (or dropped
// after a store error) and returns the store error, if any.
func (s *Store) Flush(ctx context.Context) error {
	if s == nil {
		return nil
	}
	if s.closed.Load() {
		return ErrClosed
	}
	done := make(chan struct{})
	select {
	case s.ops <- op{kind: opFlush, done: done}:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.writerDone:
		return ErrClosed
	}
	select {
	case <-done:
		return s.Err()
	case <-ctx.Done():
		return ctx.Err()
	case <-s.writerDone:
		return s.Err()
	}
}

// warn reports err through Options.Warn.
func (s *Store) warn(err error) {
	if s.opts.Warn != nil {
		s.opts.Warn(err)
	}
}

// fail stops writing and reports err, the first time only: through Warn,
// or once Close has begun, as Close's error.
func (s *Store) fail(err error) {
	err = fmt.Errorf("%w; no more runs are recorded by this process", classify(s.path, "write", err))
	if !s.fatal.CompareAndSwap(nil, &err) {
		return
	}
	if s.closed.Load() {
		s.closingErr = err
		return
	}
	s.warn(err)
}

// writer is the one goroutine that writes: one connection, one write
// transaction per batch.
func (s *Store) writer() {
	defer close(s.writerDone)
	w := &writeState{s: s, runs: map[*Recorder]runState{}}
	defer w.close()
	batch := make([]op, 0, maxBatch)
	for {
		select {
		case o := <-s.ops:
			batch = s.collect(append(batch[:0], o))
			w.apply(batch)
		case <-s.stopping:
			for {
				batch = s.collect(batch[:0])
				if len(batch) == 0 {
					return
				}
				w.apply(batch)
			}
		}
	}
}

// collect appends what is queued now, up to maxBatch operations.
func (s *Store) collect(batch []op) []op {
	for len(batch) < maxBatch {
		select {
		case o := <-s.ops:
			batch = append(batch, o)
		default:
			return batch
		}
	}
	return batch
}

type runState struct {
	seq     int64
	started time.Time
}

type writeState struct {
	s     *Store
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	runs  map[*Recorder]runState // runs begun and not ended by this process
}

func (w *writeState) close() {
	for _, st := range w.stmts {
		st.Close()
	}
	if w.conn != nil {
		w.conn.Close()
	}
}

func (w *writeState) apply(batch []op) {
	if w.s.fatal.Load() == nil {
		if err := w.write(batch); err != nil {
			w.s.fail(err)
		}
	}
	for _, o := range batch {
		if o.done != nil {
			close(o.done)
		}
	}
}

const (
	sqlInsertRun = `INSERT INTO runs (id, parent_id, resumed_from, command, workspace, query, plan, backend, model, settings, started_at, bytes)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	// Steps and events of a run that Prune deleted meanwhile are skipped,
	// not a foreign-key failure that would stop the store.
	sqlInsertStep = `INSERT INTO steps (run, idx, thought, tool, args, decision, observation, exit_code, started_at, duration_ns, prompt_tokens, completion_tokens, cached_tokens)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 WHERE EXISTS (SELECT 1 FROM runs WHERE seq = ?1)
ON CONFLICT (run, idx) DO NOTHING`
	sqlInsertEvent = `INSERT INTO events (run, line) SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM runs WHERE seq = ?1)`
	sqlStepTotals  = `SELECT count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), coalesce(sum(cached_tokens), 0) FROM steps WHERE run = ?`
	sqlEndRun      = `UPDATE runs SET ended_at = ?, answer = ?, reason = ?, exit_code = ?, prompt_tokens = ?, completion_tokens = ?, cached_tokens = ?,
steps = ?, duration_ns = ?, result = ?, dropped_events = ?,
checkpoint = CASE WHEN ? = 0 THEN '' ELSE checkpoint END WHERE seq = ?`
	sqlAddBytes   = `UPDATE runs SET bytes = bytes + ? WHERE seq = ?`
	sqlCheckpoint = `UPDATE runs SET checkpoint = ? WHERE seq = ?`
)

// stmt is query prepared once on the writer's connection. The writer runs
// BEGIN and COMMIT itself on that connection instead of using a sql.Tx,
// whose Stmt re-prepares a connection's statements on every use.
func (w *writeState) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	w.stmts[query] = st
	return st, nil
}

func (w *writeState) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (w *writeState) write(batch []op) error {
	ctx := w.s.writeCtx
	if w.conn == nil {
		conn, err := w.s.db.Conn(ctx)
		if err != nil {
			return err
		}
		w.conn, w.stmts = conn, map[string]*sql.Stmt{}
	}
	err := retryBusy(ctx, w.s.opts.BusyTimeout, func() error {
		_, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		return err
	})
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			// Not ctx: the rollback must run even when ctx was canceled.
			w.conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	added := map[int64]int64{} // run seq -> bytes stored, for Prune's sizes
	for _, o := range batch {
		switch o.kind {
		case opBegin:
			if err := w.begin(ctx, o, added); err != nil {
				return err
			}
		case opStep:
			st, ok := w.runs[o.rec]
			if !ok {
				continue
			}
			p := o.step
			args, n, err := w.squeezeFor(ctx, st.seq, p.Args)
			if err != nil {
				return fmt.Errorf("step %d of run %s: %w", p.Index, o.rec.id, err)
			}
			if _, err := w.exec(ctx, sqlInsertStep, st.seq, p.Index, p.Thought, p.Tool, args, p.Decision, p.Observation,
				p.ExitCode, unixNano(p.StartedAt), int64(p.Duration), p.Usage.Prompt, p.Usage.Completion, p.Usage.Cached); err != nil {
				return fmt.Errorf("step %d of run %s: %w", p.Index, o.rec.id, err)
			}
			added[st.seq] += n + int64(len(p.Thought)+len(p.Tool)+len(args)+len(p.Decision)+len(p.Observation))
		case opEvent:
			st, ok := w.runs[o.rec]
			if !ok {
				continue
			}
			line, n, err := w.squeezeFor(ctx, st.seq, o.line)
			if err != nil {
				return fmt.Errorf("trace event of run %s: %w", o.rec.id, err)
			}
			if _, err := w.exec(ctx, sqlInsertEvent, st.seq, line); err != nil {
				return fmt.Errorf("trace event of run %s: %w", o.rec.id, err)
			}
			added[st.seq] += n + int64(len(line))
		case opCheckpoint:
			st, ok := w.runs[o.rec]
			if !ok {
				continue
			}
			cp, err := w.squeezeExisting(ctx, st.seq, o.line)
			if err != nil {
				return fmt.Errorf("checkpoint of run %s: %w", o.rec.id, err)
			}
			if _, err := w.exec(ctx, sqlCheckpoint, cp, st.seq); err != nil {
				return fmt.Errorf("checkpoint of run %s: %w", o.rec.id, err)
			}
		case opEnd:
			if err := w.end(ctx, o, added); err != nil {
				return err
			}
		}
	}
	for seq, n := range added {
		if _, err := w.exec(ctx, sqlAddBytes, n, seq); err != nil {
			return err
		}
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	committed = true
	return nil
}

// errDuplicateRun is reported (not fatal) when Begin reuses a stored id.
var errDuplicateRun = errors.New("a run with this id is already recorded; this run is not recorded")

func (w *writeState) begin(ctx context.Context, o op, added map[int64]int64) error {
	r := o.run
	if r.ID == "" {
		w.s.warn(fmt.Errorf("run history %s: a run without an id is not recorded", w.s.path))
		return nil
	}
	plan, blobs := squeeze(r.Plan)
	size := int64(len(r.ID) + len(r.ParentID) + len(r.ResumedFrom) + len(r.Command) + len(r.Workspace) + len(r.Query) +
		len(plan) + len(r.Backend) + len(r.Model) + len(r.Settings))
	res, err := w.exec(ctx, sqlInsertRun, r.ID, r.ParentID, r.ResumedFrom, r.Command, r.Workspace, r.Query, plan,
		r.Backend, r.Model, r.Settings, unixNano(r.StartedAt), size)
	if err != nil {
		return fmt.Errorf("begin run %s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		w.s.warn(fmt.Errorf("run history %s: run %s: %w", w.s.path, r.ID, errDuplicateRun))
		return nil
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return err
	}
	n, err := w.storeBlobs(ctx, seq, blobs)
	if err != nil {
		return fmt.Errorf("begin run %s: %w", r.ID, err)
	}
	added[seq] += n
	w.runs[o.rec] = runState{seq: seq, started: r.StartedAt}
	return nil
}

func (w *writeState) end(ctx context.Context, o op, added map[int64]int64) error {
	st, ok := w.runs[o.rec]
	if !ok {
		return nil
	}
	delete(w.runs, o.rec)
	f := o.final
	if f.Steps == 0 || f.Usage == (Usage{}) {
		var n int
		var u Usage
		totals, err := w.stmt(ctx, sqlStepTotals)
		if err != nil {
			return fmt.Errorf("end run %s: %w", o.rec.id, err)
		}
		if err := totals.QueryRowContext(ctx, st.seq).Scan(&n, &u.Prompt, &u.Completion, &u.Cached); err != nil {
			return fmt.Errorf("end run %s: %w", o.rec.id, err)
		}
		if f.Steps == 0 {
			f.Steps = n
		}
		if f.Usage == (Usage{}) {
			f.Usage = u
		}
	}
	if f.Duration == 0 && !st.started.IsZero() {
		f.Duration = f.EndedAt.Sub(st.started)
	}
	reason := f.Reason
	if reason == "" {
		reason = "ended"
	}
	result, n, err := w.squeezeFor(ctx, st.seq, f.Result)
	if err != nil {
		return fmt.Errorf("end run %s: %w", o.rec.id, err)
	}
	if _, err := w.exec(ctx, sqlEndRun, unixNano(f.EndedAt), f.Answer, reason, f.ExitCode, f.Usage.Prompt, f.Usage.Completion,
		f.Usage.Cached, f.Steps, int64(f.Duration), result, o.dropped, f.ExitCode, st.seq); err != nil {
		return fmt.Errorf("end run %s: %w", o.rec.id, err)
	}
	added[st.seq] += n + int64(len(f.Answer)+len(f.Reason)+len(result))
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
