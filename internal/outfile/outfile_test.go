package outfile

import (
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

func TestRecordsStayWhole(t *testing.T) {
	for _, appendMode := range []bool{false, true} {
		name := "truncate"
		if appendMode {
			name = "append"
		}
		t.Run(name, func(t *testing.T) {
			path := t.TempDir() + "/out.jsonl"
			flag := os.O_WRONLY | os.O_CREATE
			if appendMode {
				flag |= os.O_APPEND
				os.WriteFile(path, []byte("earlier\n"), 0o644)
			}
			f, err := os.OpenFile(path, flag, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var reported []error
			w := New(f, "standard output", func(err error) { reported = append(reported, err) })
			// Write a record, then fill the "disk" in the middle of the
			// next one by lowering the file size limit.
			if _, err := w.Write([]byte(`{"id":1}` + "\n")); err != nil {
				t.Fatal(err)
			}
			var lim syscall.Rlimit
			syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim)
			st, _ := f.Stat()
			old := lim
			lim.Cur = uint64(st.Size() + 5)
			// EFBIG instead of SIGXFSZ: the signal would end the test.
			sigxfszIgnored(t)
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Skip("cannot lower RLIMIT_FSIZE:", err)
			}
			_, err = w.Write([]byte(`{"id":2,"long":"` + strings.Repeat("x", 100) + `"}` + "\n"))
			syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
			var oe *Error
			if !errors.As(err, &oe) || oe.What != "standard output" {
				t.Fatalf("error %v, want an *Error for standard output", err)
			}
			if len(reported) != 1 {
				t.Errorf("onError called %d times", len(reported))
			}
			if _, err := w.Write([]byte("later\n")); err == nil || w.Err() == nil {
				t.Error("a write after the failure succeeded")
			}
			b, _ := os.ReadFile(path)
			want := `{"id":1}` + "\n"
			if appendMode {
				want = "earlier\n" + want
			}
			if string(b) != want {
				t.Errorf("file %q, want %q (no partial record)", b, want)
			}
			if len(reported) != 1 {
				t.Errorf("onError called %d times after a second failure", len(reported))
			}
		})
	}
}

// A closed pipe: the error is kept, nothing is cut (there is nothing to cut).
func TestPipeClosed(t *testing.T) {
	r, wf, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	sigpipeIgnored(t)
	w := New(wf, "standard output", nil)
	if _, err := w.Write([]byte("x\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("error %v, want EPIPE", err)
	}
	wf.Close()
}
func sigxfszIgnored(t *testing.T) {
	signal.Ignore(syscall.SIGXFSZ)
	t.Cleanup(func() { signal.Reset(syscall.SIGXFSZ) })
}

func sigpipeIgnored(t *testing.T) {
	signal.Ignore(syscall.SIGPIPE)
	t.Cleanup(func() { signal.Reset(syscall.SIGPIPE) })
}
