// Package filekind names file types for messages, so every refusal of a
// non-regular file (file tools, model files) says the same thing, and opens
// the files tact reads and writes by name (config, plans, scripts, traces,
// prompt cache entries) by one rule: never blocking, only the kinds
// allowed, within a size cap (open.go).
package filekind

import "io/fs"

// Name is "a directory", "a named pipe (FIFO)", ... for m's type.
func Name(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	default:
		return "not a regular file"
	}
}
