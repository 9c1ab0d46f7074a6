package config

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: 0},
		{in: "1048576", want: 1 << 20},
		{in: "300MB", want: 300e6},
		{in: "300mb", want: 300e6},
		{in: "512MiB", want: 512 << 20},
		{in: "512 MiB", want: 512 << 20},
		{in: " 2G ", want: 2 << 30},
		{in: "1.5GiB", want: 3 << 29},
		{in: "1.5KB", want: 1500},
		{in: "0.5", want: 0},   // fractions of a byte are dropped
		{in: "1.", want: 1},    // a trailing point is a number
		{in: ".5k", want: 512}, // and a leading one
		{in: "10B", want: 10},
		{in: "8TiB", want: 8 << 40},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "9223372036854775808", bad: true},
		{in: "9000000TiB", bad: true},
		{in: "", bad: true},
		{in: "MB", bad: true},
		{in: ".", bad: true},
		{in: "-1", bad: true},
		{in: "-1MB", bad: true},
		{in: "1e9", bad: true},
		{in: "NaN", bad: true},
		{in: "inf", bad: true},
		{in: "1.2.3", bad: true},
		{in: "12 parsecs", bad: true},
		{in: "0x10", bad: true},
		{in: "1_000", bad: true},
	} {
		got, err := ParseByteSize(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: got %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestByteSizeString(t *testing.T) {
	for _, c := range []struct {
		n    ByteSize
		want string
	}{{0, "0"}, {1000, "1000"}, {1024, "1KiB"}, {512 << 20, "512MiB"}, {3 << 29, "1536MiB"}, {1 << 40, "1TiB"}, {1<<20 + 1, "1048577"}} {
		if got := c.n.String(); got != c.want {
			t.Errorf("%d: %q, want %q", c.n, got, c.want)
		}
	}
}

// The prompt cache's settings: the variable, the default and a bad value
// reported like every other setting's.
func TestPromptCacheSettings(t *testing.T) {
	s := Defaults()
	if s.PromptCacheMax != 512<<20 || s.NoPromptCache {
		t.Fatalf("defaults: %v %v", s.PromptCacheMax, s.NoPromptCache)
	}
	t.Setenv("TACT_PROMPT_CACHE_MAX", "1GB")
	t.Setenv("TACT_NO_PROMPT_CACHE", "1")
	s, o := Load()
	if s.PromptCacheMax != 1e9 || !s.NoPromptCache {
		t.Fatalf("from the environment: %v %v", s.PromptCacheMax, s.NoPromptCache)
	}
	t.Setenv("TACT_PROMPT_CACHE_MAX", "lots")
	s, o = Load()
	all := func(string) bool { return true }
	err := o.Check(s, all, func(string) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "TACT_PROMPT_CACHE_MAX=lots: not a size") {
		t.Fatalf("bad variable: %v", err)
	}
	s.PromptCacheMax = -1
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--prompt-cache-max -1: must not be negative") {
		t.Fatalf("negative: %v", err)
	}
	var b ByteSize
	if err := b.Set("2MiB"); err != nil || b != 2<<20 || b.Type() != "size" {
		t.Fatal(b, err)
	}
	if err := b.Set("x"); err == nil {
		t.Fatal("Set accepted x")
	}
}

// tact's directories follow the XDG Base Directory spec: an absolute
// variable wins, a relative one is ignored, and without HOME the user
// database's home is used (never a path relative to where tact runs).
func TestBaseDirs(t *testing.T) {
	dirs := map[string]func() string{"XDG_CACHE_HOME": PromptCacheDir, "XDG_DATA_HOME": DataDir,
		"XDG_CONFIG_HOME": ConfigDir, "XDG_STATE_HOME": StateDir}
	defaults := map[string]string{"XDG_CACHE_HOME": ".cache/tact/kv", "XDG_DATA_HOME": ".local/share/tact",
		"XDG_CONFIG_HOME": ".config/tact", "XDG_STATE_HOME": ".local/state/tact"}
	for variable, dir := range dirs {
		for _, tc := range []struct{ value, home, want string }{
			{"/k", "/h", "/k/tact"},
			{"", "/h", "/h/" + defaults[variable]},
			{"rel/dir", "/h", "/h/" + defaults[variable]},
			{"./x", "/h", "/h/" + defaults[variable]},
		} {
			t.Setenv(variable, tc.value)
			t.Setenv("HOME", tc.home)
			want := tc.want
			if variable == "XDG_CACHE_HOME" && tc.value == "/k" {
				want = "/k/tact/kv"
			}
			if got := dir(); got != want {
				t.Errorf("%s=%q HOME=%q: %s, want %s", variable, tc.value, tc.home, got, want)
			}
		}
		t.Setenv(variable, "")
		t.Setenv("HOME", "")
		if got := dir(); !filepath.IsAbs(got) {
			t.Errorf("%s and HOME unset: %q is relative", variable, got)
		}
	}
}

// FuzzParseByteSize: sizes never come out negative, the plain digits of a
// number that fits parse to it, and String reads back exactly.
func FuzzParseByteSize(f *testing.F) {
	for _, seed := range []string{"0", "512MiB", "1.5 gb", "-1", "1e3", "99999999999999999999", ".k", "7 TiB", "1.0000000000000000001K"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseByteSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("%q: negative %d", s, n)
		}
		if v, perr := strconv.ParseInt(strings.TrimSpace(s), 10, 64); perr == nil && v != n {
			t.Fatalf("%q: %d, want %d", s, n, v)
		}
		back, err := ParseByteSize(ByteSize(n).String())
		if err != nil || back != n {
			t.Fatalf("%q: %d -> %q -> %d, %v", s, n, ByteSize(n).String(), back, err)
		}
	})
}
