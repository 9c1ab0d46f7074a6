package llamalib

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// llama.cpp and ggml log through one callback, set before the backends
// load (their loading is logged too). By default nothing is written: a
// model load prints hundreds of INFO lines. SetLogs turns them on.
var (
	logOut   atomic.Pointer[io.Writer] // nil: logs dropped
	logCB    uintptr
	logCBSet sync.Once
)

func (l *Lib) initLogs() {
	logCBSet.Do(func() {
		logCB = purego.NewCallback(func(level int32, text *byte, _ unsafe.Pointer) {
			w := logOut.Load()
			if w == nil || text == nil {
				return
			}
			_, _ = io.WriteString(*w, goString(text))
		})
	})
	l.a.llamaLogSet(logCB, nil)
	l.a.ggmlLogSet(logCB, nil)
}

// SetLogs writes llama.cpp's and ggml's logs to stderr when verbose and
// drops them otherwise.
func (l *Lib) SetLogs(verbose bool) {
	if verbose {
		l.SetLogWriter(os.Stderr)
	} else {
		l.SetLogWriter(nil)
	}
}

// SetLogWriter sends llama.cpp's and ggml's logs to w (nil: dropped).
func (l *Lib) SetLogWriter(w io.Writer) {
	if w == nil {
		logOut.Store(nil)
		return
	}
	logOut.Store(&w)
	// Loading a backend may have replaced ggml's logger with its own.
	l.a.llamaLogSet(logCB, nil)
	l.a.ggmlLogSet(logCB, nil)
}
