package history

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"time"
)

// migrations[i] takes the schema from version i to i+1 (PRAGMA
// user_version). Append only: a released migration never changes, since
// databases in the field are at every version.
var migrations = []string{
	// 1: runs, their steps and trace events, and the store's own settings.
	// Times are Unix nanoseconds; ended_at, reason and exit_code are NULL
	// until the run ends (a run killed before End reads as interrupted).
	`
CREATE TABLE runs (
	seq               INTEGER PRIMARY KEY,
	id                TEXT    NOT NULL UNIQUE,
	parent_id         TEXT    NOT NULL DEFAULT '',
	resumed_from      TEXT    NOT NULL DEFAULT '',
	command           TEXT    NOT NULL DEFAULT '',
	workspace         TEXT    NOT NULL DEFAULT '',
	query             TEXT    NOT NULL DEFAULT '',
	plan              TEXT    NOT NULL DEFAULT '',
	backend           TEXT    NOT NULL DEFAULT '',
	model             TEXT    NOT NULL DEFAULT '',
	settings          TEXT    NOT NULL DEFAULT '',
	started_at        INTEGER NOT NULL,
	ended_at          INTEGER,
	answer            TEXT    NOT NULL DEFAULT '',
	reason            TEXT,
	exit_code         INTEGER,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	cached_tokens     INTEGER NOT NULL DEFAULT 0,
	steps             INTEGER NOT NULL DEFAULT 0,
	duration_ns       INTEGER NOT NULL DEFAULT 0,
	result            TEXT    NOT NULL DEFAULT '',
	dropped_events    INTEGER NOT NULL DEFAULT 0,
	bytes             INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_started ON runs (started_at, seq);
CREATE INDEX runs_workspace ON runs (workspace, started_at, seq);
CREATE TABLE steps (
	run               INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
	idx               INTEGER NOT NULL,
	thought           TEXT    NOT NULL DEFAULT '',
	tool              TEXT    NOT NULL DEFAULT '',
	args              TEXT    NOT NULL DEFAULT '',
	decision          TEXT    NOT NULL DEFAULT '',
	observation       TEXT    NOT NULL DEFAULT '',
	exit_code         INTEGER NOT NULL DEFAULT 0,
	started_at        INTEGER NOT NULL DEFAULT 0,
	duration_ns       INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	cached_tokens     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run, idx)
);
CREATE TABLE events (
	id   INTEGER PRIMARY KEY,
	run  INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
	line TEXT    NOT NULL
);
CREATE INDEX events_run ON events (run, id);
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
`,
	// 2: full-text search over queries, answers, thoughts and observations.
	// Row ids encode the run: seq<<20 is the run's own row (query, answer),
	// seq<<20 + idx + 1 a step's, so a run's rows are one rowid range.
	// Triggers keep it in step with runs and steps; existing rows are indexed.
	`
CREATE VIRTUAL TABLE run_fts USING fts5 (
	query, answer, thought, observation,
	tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER runs_fts_insert AFTER INSERT ON runs BEGIN
	INSERT INTO run_fts (rowid, query, answer) VALUES (new.seq << 20, new.query, new.answer);
END;
CREATE TRIGGER runs_fts_answer AFTER UPDATE OF answer ON runs BEGIN
	UPDATE run_fts SET answer = new.answer WHERE rowid = new.seq << 20;
END;
CREATE TRIGGER runs_fts_delete AFTER DELETE ON runs BEGIN
	DELETE FROM run_fts WHERE rowid BETWEEN old.seq << 20 AND (old.seq << 20) + 1048575;
END;
CREATE TRIGGER steps_fts_insert AFTER INSERT ON steps WHEN new.idx BETWEEN 0 AND 1048574 BEGIN
	INSERT INTO run_fts (rowid, thought, observation) VALUES ((new.run << 20) + new.idx + 1, new.thought, new.observation);
END;
INSERT INTO run_fts (rowid, query, answer) SELECT seq << 20, query, answer FROM runs;
INSERT INTO run_fts (rowid, thought, observation)
	SELECT (run << 20) + idx + 1, thought, observation FROM steps WHERE idx BETWEEN 0 AND 1048574;
`,
	// 3: the latest checkpoint of a run (the executor's state after its
	// last finished step, JSON), for resuming it; emptied when the run
	// succeeds.
	`ALTER TABLE runs ADD COLUMN checkpoint TEXT NOT NULL DEFAULT '';`,
	// Big JSON string values, stored once per run (blobs.go).
	`
CREATE TABLE blobs (
	hash TEXT    NOT NULL,
	run  INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
	data TEXT    NOT NULL,
	PRIMARY KEY (hash, run)
);
CREATE INDEX blobs_run ON blobs (run);
`,
}

func userVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// migrate brings db to version target in one immediate transaction, so
// processes opening a new database at once migrate it once; the version is
// read again under the lock.
func migrate(ctx context.Context, db *sql.DB, target int, busy time.Duration) error {
	tx, err := beginImmediate(ctx, db, busy)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	v, err := userVersion(ctx, tx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("%w: schema %d, this tact knows up to %d (upgrade tact or set another history path)", ErrNewerSchema, v, len(migrations))
	}
	if v >= target {
		return tx.Commit()
	}
	for i := v; i < target; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	// PRAGMA arguments cannot be bound; target is an int.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", target)); err != nil {
		return fmt.Errorf("set schema version %d: %w", target, err)
	}
	return tx.Commit()
}

// beginer is a *sql.DB or a *sql.Conn.
type beginer interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}

// beginImmediate starts a write transaction (BEGIN IMMEDIATE, from the
// DSN's _txlock), retrying as retryBusy does.
func beginImmediate(ctx context.Context, b beginer, busy time.Duration) (*sql.Tx, error) {
	var tx *sql.Tx
	err := retryBusy(ctx, busy, func() (err error) {
		tx, err = b.BeginTx(ctx, nil)
		return err
	})
	return tx, err
}

// retryBusy runs begin, which takes the write lock. SQLite's busy handler
// waits up to the busy timeout for the lock; when it still answers
// SQLITE_BUSY (it does not wait in some WAL cases, e.g. while another
// connection runs recovery) this retries with a jittered backoff for up to
// another busy timeout.
func retryBusy(ctx context.Context, busy time.Duration, begin func() error) error {
	deadline := time.Now().Add(busy)
	backoff := 2 * time.Millisecond
	for {
		err := begin()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		wait := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}
