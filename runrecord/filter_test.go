package runrecord

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 26, 14, 3, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: ""},
		{in: "24h", want: now.Add(-24 * time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "1h30m", want: now.Add(-90 * time.Minute)},
		{in: "7d", want: now.AddDate(0, 0, -7)},
		{in: "2w", want: now.AddDate(0, 0, -14)},
		{in: "2026-11-25", want: time.Date(2026, 11, 25, 0, 0, 0, 0, time.Local)},
		{in: "2026-11-25 14:03", want: time.Date(2026, 11, 25, 14, 3, 0, 0, time.Local)},
		{in: "2026-11-25T14:03:00+02:00", want: time.Date(2026, 11, 25, 12, 3, 0, 0, time.UTC)},
		{in: "2026-11-25T14:03:00.5Z", want: time.Date(2026, 11, 25, 14, 3, 0, 5e8, time.UTC)},
		{in: "-1h", err: true},
		{in: "3x", err: true},
		{in: "yesterday", err: true},
		{in: "2026-13-01", err: true},
		{in: "d", err: true},
	} {
		got, err := ParseTime(tc.in, now)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// --since and --until read what a user types: a time or an error, never a
// crash, and never a time after now for a duration ago.
func FuzzParseTime(f *testing.F) {
	now := time.Date(2026, 11, 26, 14, 3, 0, 0, time.Local)
	for _, s := range []string{"24h", "7d", "2w", "99999w", "2026-11-25", "2026-11-25 14:03", "2026-11-25T14:03:00Z", "-1h", "1e9h", "d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err == nil && durationAgo.MatchString(s) && got.After(now) {
			t.Fatalf("%q is %v, after now", s, got)
		}
	})
}
