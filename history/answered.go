package history

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// ResumedBy is the id of a run that continues runID (its resumed_from),
// "" when none does: a paused run is answered once.
func (s *Store) ResumedBy(ctx context.Context, runID string) (string, error) {
	if s == nil {
		return "", ErrClosed
	}
	var id string
	err := s.db.QueryRowContext(ctx, "SELECT id FROM runs WHERE resumed_from = ? ORDER BY id LIMIT 1", runID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", classify(s.path, "read the runs that continue run "+runID, err)
	}
	return id, nil
}

// ErrClaimed is ClaimAnswer's error for a run that another process (or
// request) is answering now.
var ErrClaimed = errors.New("run is being answered")

// ClaimAnswer takes run runID's answer lock: an exclusive flock on a file
// under the store's directory (answering/, one file a run), so that two
// answers racing on one paused run do not both continue it; the second
// gets ErrClaimed at once. The caller checks that nobody answered the run
// after taking it, and holds it until the run answering it is recorded.
// A process that dies drops its locks; release is safe to call twice.
// Where there is no flock (not unix) the claim always succeeds.
func (s *Store) ClaimAnswer(runID string) (release func(), err error) {
	if s == nil {
		return nil, ErrClosed
	}
	dir := filepath.Join(filepath.Dir(s.path), "answering")
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("run history: answer lock: %v", err)
	}
	sum := sha256.Sum256([]byte(runID))
	name := filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run history: answer lock: %v", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }, nil // closing drops the flock
}
