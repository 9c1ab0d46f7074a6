package runrecord

import (
	"errors"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/react"
)

// Reasons are the reasons a record can end with: the run's termination
// reasons (react.Reason, as --json's termination_reason) and the store's
// "interrupted" for a run that never ended.
var Reasons = func() []string {
	var out []string
	for _, r := range react.Reasons {
		out = append(out, string(r))
	}
	return append(out, history.ReasonInterrupted)
}()

// WorkspaceKey is dir as the engine records a workspace (tools.NewEnv:
// the absolute path, symlinks evaluated). A directory that is gone keeps
// its absolute, clean path, so its old runs can still be found.
func WorkspaceKey(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return abs, nil
}

// durationAgo is a whole number of days or weeks, which time.ParseDuration
// lacks.
var durationAgo = regexp.MustCompile(`^(\d{1,5})([dw])$`)

// ParseTime reads a bound on when runs started (tact log --since,
// --until): a duration ago (Go's units, plus d and w), a date or a minute
// in local time, or RFC 3339. "" is the zero time (no bound).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if m := durationAgo.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1]) // the pattern bounds it
		days := n
		if m[2] == "w" {
			days = 7 * n
		}
		return now.AddDate(0, 0, -days), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("a negative duration")
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("not a time (want a duration ago like 24h or 7d, a date like 2026-11-25, or RFC 3339)")
}
