package history

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"
)

// PruneInterval is how often MaybePrune prunes.
const PruneInterval = 24 * time.Hour

// metaLastPrune is the meta key holding the last prune time (Unix ns).
const metaLastPrune = "last_prune"

// maxPrunePasses bounds Prune's size passes: each deletes the oldest runs
// holding the excess share of the stored text and measures again.
const maxPrunePasses = 4

// PruneResult says what Prune deleted.
type PruneResult struct {
	Runs      int   // runs deleted, with their steps, events and index rows
	SizeAfter int64 // bytes of the database's pages in use afterwards
}

// Prune deletes, oldest first, the runs started more than maxAge ago and
// then as many more as keep the database's used pages within maxSize bytes,
// with their steps, trace events and search rows; then it returns the freed
// pages to the file system. Zero maxAge or maxSize does not limit that.
// A run still being recorded may be deleted; its later steps are dropped.
func (s *Store) Prune(ctx context.Context, maxAge time.Duration, maxSize int64) (PruneResult, error) {
	if s == nil {
		return PruneResult{}, ErrClosed
	}
	var res PruneResult
	if maxAge > 0 {
		cutoff := s.opts.Now().Add(-maxAge).UnixNano()
		n, err := s.deleteRuns(ctx, "DELETE FROM runs WHERE started_at < ?", cutoff)
		if err != nil {
			return res, err
		}
		res.Runs += n
	}
	size, err := s.usedSize(ctx)
	if err != nil {
		return res, err
	}
	for pass := 0; maxSize > 0 && size > maxSize && pass < maxPrunePasses; pass++ {
		n, err := s.deleteShare(ctx, float64(size-maxSize)/float64(size))
		if err != nil {
			return res, err
		}
		res.Runs += n
		if n == 0 {
			break
		}
		if err := s.compact(ctx); err != nil {
			return res, err
		}
		if size, err = s.usedSize(ctx); err != nil {
			return res, err
		}
	}
	if res.Runs > 0 {
		if err := s.compact(ctx); err != nil {
			return res, err
		}
		// Give the free pages back and truncate the WAL; another
		// process reading may keep the WAL from truncating, which
		// is fine.
		if _, err := s.db.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
			return res, classify(s.path, "vacuum", err)
		}
		if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil && !isBusy(err) {
			return res, classify(s.path, "checkpoint", err)
		}
		if size, err = s.usedSize(ctx); err != nil {
			return res, err
		}
	}
	res.SizeAfter = size
	return res, nil
}

// MaybePrune prunes (as Prune) when it is due, and reports whether it did:
// when the last prune that finished, by any process, was PruneInterval or
// longer ago, or the database is over maxSize by a quarter (a lowered
// --history-max-size holds from the next run, not the next day). The time
// is recorded only once the prune has finished: one cut short (a short
// command exits, ctx ends) is due again next time. Two processes may prune
// at once; each deletion is its own transaction, so the second finds less
// to do.
func (s *Store) MaybePrune(ctx context.Context, maxAge time.Duration, maxSize int64) (bool, PruneResult, error) {
	if s == nil {
		return false, PruneResult{}, ErrClosed
	}
	now := s.opts.Now()
	due, err := s.pruneDue(ctx, now, maxSize)
	if err != nil || !due {
		return false, PruneResult{}, err
	}
	res, err := s.Prune(ctx, maxAge, maxSize)
	if err != nil {
		return true, res, err
	}
	if err := ctx.Err(); err != nil {
		return true, res, err
	}
	return true, res, s.recordPrune(ctx, now)
}

// pruneDue reports whether a prune is due (MaybePrune).
func (s *Store) pruneDue(ctx context.Context, now time.Time, maxSize int64) (bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", metaLastPrune).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, classify(s.path, "read last prune time", err)
	}
	last, perr := strconv.ParseInt(v, 10, 64)
	if err != nil || perr != nil {
		return true, nil
	}
	if since := now.Sub(time.Unix(0, last)); since < 0 || since >= PruneInterval {
		return true, nil
	}
	if maxSize <= 0 {
		return false, nil
	}
	size, err := s.usedSize(ctx)
	if err != nil {
		return false, err
	}
	return size > maxSize+maxSize/4, nil
}

// recordPrune records now as the last prune time.
func (s *Store) recordPrune(ctx context.Context, now time.Time) error {
	tx, err := beginImmediate(ctx, s.db, s.opts.BusyTimeout)
	if err != nil {
		return classify(s.path, "record prune time", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		metaLastPrune, strconv.FormatInt(now.UnixNano(), 10)); err != nil {
		return classify(s.path, "record prune time", err)
	}
	if err := tx.Commit(); err != nil {
		return classify(s.path, "record prune time", err)
	}
	return nil
}

// deleteRuns runs a DELETE on runs in a write transaction; the foreign keys
// delete the steps and events, a trigger the search rows.
func (s *Store) deleteRuns(ctx context.Context, q string, args ...any) (int, error) {
	tx, err := beginImmediate(ctx, s.db, s.opts.BusyTimeout)
	if err != nil {
		return 0, classify(s.path, "prune", err)
	}
	defer tx.Rollback()
	r, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, classify(s.path, "prune", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, classify(s.path, "prune", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify(s.path, "prune", err)
	}
	return int(n), nil
}

// deleteShare deletes the oldest runs that hold at least share of the
// stored text (runs.bytes), at least one run.
func (s *Store) deleteShare(ctx context.Context, share float64) (int, error) {
	var total int64
	if err := s.db.QueryRowContext(ctx, "SELECT coalesce(sum(bytes), 0) FROM runs").Scan(&total); err != nil {
		return 0, classify(s.path, "prune", err)
	}
	want := int64(share*float64(total)) + 1
	// The newest run (by start, then seq) whose running total from the
	// oldest reaches want: it and every older run go.
	var started, seq int64
	err := s.db.QueryRowContext(ctx, `SELECT started_at, seq FROM (
	SELECT started_at, seq, sum(bytes) OVER (ORDER BY started_at, seq) AS upto FROM runs
) WHERE upto >= ? ORDER BY started_at, seq LIMIT 1`, want).Scan(&started, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return s.deleteRuns(ctx, "DELETE FROM runs")
	}
	if err != nil {
		return 0, classify(s.path, "prune", err)
	}
	return s.deleteRuns(ctx, "DELETE FROM runs WHERE (started_at, seq) <= (?, ?)", started, seq)
}

// compact merges the search index, which keeps deleted rows' entries until
// its segments merge.
func (s *Store) compact(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "INSERT INTO run_fts (run_fts) VALUES ('optimize')"); err != nil {
		return classify(s.path, "optimize search index", err)
	}
	return nil
}

// usedSize is the size of the database's pages in use (not on the free
// list), in bytes.
func (s *Store) usedSize(ctx context.Context) (int64, error) {
	var pages, free, pageSize int64
	err := s.db.QueryRowContext(ctx, "SELECT p.page_count, f.freelist_count, s.page_size FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s").
		Scan(&pages, &free, &pageSize)
	if err != nil {
		return 0, classify(s.path, "measure size", err)
	}
	return (pages - free) * pageSize, nil
}
