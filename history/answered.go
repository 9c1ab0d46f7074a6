package history

import (
	"context"
	"database/sql"
	"errors"
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
