package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name, state, home, want string
	}{
		{"XDG_STATE_HOME", "/xdg/state", "/home/u", "/xdg/state/tact/runs.db"},
		{"relative XDG_STATE_HOME is ignored", "rel/state", "/home/u", "/home/u/.local/state/tact/runs.db"},
		{"unset", "", "/home/u", "/home/u/.local/state/tact/runs.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tt.state)
			t.Setenv("HOME", tt.home)
			got, err := DefaultPath()
			if err != nil || got != tt.want {
				t.Fatalf("DefaultPath() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOpenCreatesPrivateDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "tact")
	path := filepath.Join(dir, "runs.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s: mode %04o, want %04o", c.path, got, c.want)
		}
	}
	ctx := context.Background()
	for pragma, want := range map[string]string{"journal_mode": "wal", "auto_vacuum": "2", "foreign_keys": "1", "user_version": "4"} {
		var got string
		if err := s.db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
	if len(migrations) != 4 {
		t.Errorf("the test above expects user_version %d", len(migrations))
	}
}

func TestOpenRefusesUnsafePaths(t *testing.T) {
	root := os.Geteuid() == 0
	tests := []struct {
		name     string
		rootOnly bool
		// setup prepares dir (which exists, 0700) and returns the path to open.
		setup func(t *testing.T, dir string) string
		want  string // in the message
	}{
		{"file is a symlink", false, func(t *testing.T, dir string) string {
			target := filepath.Join(dir, "elsewhere.db")
			mustWrite(t, target, nil, 0o600)
			mustDo(t, os.Symlink(target, filepath.Join(dir, "runs.db")))
			return filepath.Join(dir, "runs.db")
		}, "is a symlink"},
		{"dangling symlink", false, func(t *testing.T, dir string) string {
			mustDo(t, os.Symlink(filepath.Join(dir, "nowhere.db"), filepath.Join(dir, "runs.db")))
			return filepath.Join(dir, "runs.db")
		}, "is a symlink"},
		{"directory is a symlink", false, func(t *testing.T, dir string) string {
			real := filepath.Join(dir, "real")
			mustDo(t, os.Mkdir(real, 0o700))
			mustDo(t, os.Symlink(real, filepath.Join(dir, "tact")))
			return filepath.Join(dir, "tact", "runs.db")
		}, "is a symlink"},
		{"file readable by others", false, func(t *testing.T, dir string) string {
			mustWrite(t, filepath.Join(dir, "runs.db"), nil, 0o644)
			return filepath.Join(dir, "runs.db")
		}, "mode 0644"},
		{"directory open to others", false, func(t *testing.T, dir string) string {
			mustDo(t, os.Mkdir(filepath.Join(dir, "tact"), 0o700))
			mustDo(t, os.Chmod(filepath.Join(dir, "tact"), 0o755))
			return filepath.Join(dir, "tact", "runs.db")
		}, "mode 0755"},
		{"file owned by another user", true, func(t *testing.T, dir string) string {
			mustWrite(t, filepath.Join(dir, "runs.db"), nil, 0o600)
			mustDo(t, os.Chown(filepath.Join(dir, "runs.db"), 12345, 12345))
			return filepath.Join(dir, "runs.db")
		}, "owned by uid 12345"},
		{"directory owned by another user", true, func(t *testing.T, dir string) string {
			mustDo(t, os.Mkdir(filepath.Join(dir, "tact"), 0o700))
			mustDo(t, os.Chown(filepath.Join(dir, "tact"), 12345, 12345))
			return filepath.Join(dir, "tact", "runs.db")
		}, "owned by uid 12345"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rootOnly && !root {
				t.Skip("chown needs root")
			}
			path := tt.setup(t, privateDir(t))
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Open: %v; want one line, ErrUnsafePath, %q", err, tt.want)
			}
		})
	}
}

func TestOpenCorruptFile(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
	}{
		{"garbage", bytes.Repeat([]byte("not a database "), 500)},
		{"damaged header", append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 4096)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(privateDir(t), "runs.db")
			mustWrite(t, path, tt.content, 0o600)
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open: %v; want ErrCorrupt naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, tt.content) {
				t.Error("the corrupt file was modified")
			}
		})
	}
}

// TestFTS5Available: the driver has FTS5 compiled in (the search index
// and Filter.Query depend on it).
func TestFTS5Available(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	var n int
	mustDo(t, s.db.QueryRowContext(ctx, "SELECT count(*) FROM pragma_compile_options WHERE compile_options = 'ENABLE_FTS5'").Scan(&n))
	if n != 1 {
		t.Error("SQLite is built without ENABLE_FTS5")
	}
	var hit int
	mustDo(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM run_fts WHERE run_fts MATCH '"x"')`).Scan(&hit))
}

// TestDamagedPages: a database whose header is fine but whose pages are
// not reads as ErrCorrupt, from Open or from the first query that meets
// the damage.
func TestDamagedPages(t *testing.T) {
	path := filepath.Join(privateDir(t), "runs.db")
	s, err := Open(path, Options{})
	mustDo(t, err)
	for i := range 50 {
		record(s, Run{ID: fmt.Sprint("run", i), Query: strings.Repeat("q", 500), StartedAt: at(time.Duration(i))}, 3, Final{Reason: "answered"})
	}
	mustDo(t, s.Close())
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	mustDo(t, err)
	fi, err := f.Stat()
	mustDo(t, err)
	garbage := bytes.Repeat([]byte{0xa5}, int(fi.Size())-4096)
	_, err = f.WriteAt(garbage, 4096) // every page but the first
	mustDo(t, err)
	mustDo(t, f.Close())

	s, err = Open(path, Options{})
	if err == nil {
		defer s.Close()
		_, err = s.List(context.Background(), Filter{Query: "q"})
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v; want ErrCorrupt naming %s", err, path)
	}
}

// TestOpenNewerSchemaUntouched: a database from a newer tact (WAL or not)
// is refused and not written to.
func TestOpenNewerSchemaUntouched(t *testing.T) {
	for _, wal := range []bool{true, false} {
		name := map[bool]string{true: "wal", false: "rollback journal"}[wal]
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(privateDir(t), "runs.db")
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			record(s, Run{ID: "r1", StartedAt: at(0)}, 1, Final{Reason: "answered"})
			mustDo(t, s.Close())
			db := rawDB(t, path)
			mustExec(t, db, "PRAGMA user_version = 99")
			if !wal {
				mustExec(t, db, "PRAGMA journal_mode = DELETE")
			}
			mustDo(t, db.Close())
			before := snapshot(t, filepath.Dir(path))

			_, err = Open(path, Options{})
			if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema 99") || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open: %v; want ErrNewerSchema naming the path and schema 99", err)
			}
			if after := snapshot(t, filepath.Dir(path)); !equalSnapshots(before, after) {
				t.Errorf("directory changed: before %v, after %v", keys(before), keys(after))
			}
		})
	}
}

// TestMigrations: a database at every earlier version, with a run in it,
// opens at the current version with its run readable and searchable.
func TestMigrations(t *testing.T) {
	for from := 0; from < len(migrations); from++ {
		t.Run("from "+string(rune('0'+from)), func(t *testing.T) {
			path := filepath.Join(privateDir(t), "runs.db")
			mustWrite(t, path, nil, 0o600)
			if from > 0 {
				db := rawDB(t, path)
				mustDo(t, migrate(context.Background(), db, from, time.Second))
				mustExec(t, db, `INSERT INTO runs (id, query, started_at, ended_at, reason, exit_code, answer) VALUES ('old', 'find zebra', 1, 2, 'answered', 0, 'giraffe')`)
				mustExec(t, db, `INSERT INTO steps (run, idx, thought, observation) VALUES (1, 0, 'think', 'saw an okapi')`)
				mustDo(t, db.Close())
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			v, err := userVersion(ctx, s.db)
			if err != nil || v != len(migrations) {
				t.Fatalf("user_version = %d, %v; want %d", v, err, len(migrations))
			}
			record(s, Run{ID: "new", Query: "new run", StartedAt: at(0)}, 1, Final{Answer: "fine", Reason: "answered"})
			flush(t, s)
			want := []string{"new"}
			if from > 0 {
				want = append(want, "old")
			}
			assertIDs(t, s, Filter{}, want)
			for _, word := range []string{"zebra", "giraffe", "okapi"} {
				var wantHit []string
				if from > 0 {
					wantHit = []string{"old"}
				}
				assertIDs(t, s, Filter{Query: word}, wantHit)
			}
		})
	}
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, path string, content []byte, mode os.FileMode) {
	t.Helper()
	mustDo(t, os.WriteFile(path, content, mode))
	mustDo(t, os.Chmod(path, mode))
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// rawDB opens path directly, as the store's connections do.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// snapshot is every file in dir and its content.
func snapshot(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func equalSnapshots(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func assertIDs(t testing.TB, s *Store, f Filter, want []string) {
	t.Helper()
	got, err := s.List(context.Background(), f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("List(%+v) = %v, want %v", f, ids, want)
	}
}
