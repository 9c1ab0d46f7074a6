package filekind

import (
	"io/fs"
	"testing"
)

func TestName(t *testing.T) {
	for _, tt := range []struct {
		mode fs.FileMode
		want string
	}{
		{fs.ModeDir | 0o755, "a directory"},
		{fs.ModeNamedPipe, "a named pipe (FIFO)"},
		{fs.ModeSocket, "a socket"},
		{fs.ModeDevice | fs.ModeCharDevice, "a character device"},
		{fs.ModeDevice, "a block device"},
		{fs.ModeSymlink, "a symbolic link"},
		{0o644, "a regular file"},
		{fs.ModeIrregular, "not a regular file"},
	} {
		if got := Name(tt.mode); got != tt.want {
			t.Errorf("Name(%v) = %q, want %q", tt.mode, got, tt.want)
		}
	}
}
