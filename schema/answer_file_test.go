package schema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/filekind"
)

// --schema @FILE goes through the shared reader every file tact opens by
// name uses (issue 36 item 17): a FIFO is refused without waiting for a
// writer, a /proc file that says size 0 stops at the cap instead of being
// read whole, a directory is refused, and a small file reads.
func TestReadAnswerFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "s.json")
	if err := os.WriteFile(good, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if raw, err := ReadAnswer("@" + good); err != nil || string(raw) != `{"type":"object"}` {
		t.Fatalf("a schema file: %s, %v", raw, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadAnswer("@" + fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, filekind.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
			t.Errorf("a FIFO: %v, want it refused as not a regular file, naming it", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("reading a FIFO as --schema @FILE blocked (waiting for a writer)")
	}
	if _, err := os.Stat("/proc/self/pagemap"); err == nil {
		// Read whole it is hundreds of MB to GBs (stat says 0); the cap
		// (or the kernel refusing a read not a multiple of 8) stops it.
		if _, err := ReadAnswer("@/proc/self/pagemap"); err == nil {
			t.Error("/proc/self/pagemap read as a schema")
		}
	}
	if _, err := ReadAnswer("@" + dir); !errors.Is(err, filekind.ErrNotRegular) {
		t.Errorf("a directory: %v", err)
	}
	if _, err := ReadAnswer("@" + filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
