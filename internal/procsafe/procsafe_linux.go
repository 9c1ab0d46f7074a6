package procsafe

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func seal() error {
	err := unix.CloseRange(firstSealed, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11 lack CLOSE_RANGE_CLOEXEC: walk /proc/self/fd.
	return sealByList()
}

func sealByList() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	own := int(d.Fd())
	d.Close()
	if err != nil {
		return fmt.Errorf("listing descriptors: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < firstSealed || fd == own {
			continue
		}
		// EBADF: the directory's own descriptor, closed since.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// notDumpable makes /proc/PID/environ, mem, maps, fd/ and ptrace of this
// process need CAP_SYS_PTRACE: a command running as the same (non-root)
// user cannot read tact's environment, which holds API keys and the serve
// token. Exec resets the flag, so every tact process sets it for itself;
// commands and MCP servers, being other programs, are dumpable again.
func notDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

func hideEnviron(hide func(name, value string) bool) error {
	start, end, err := environBounds()
	if err != nil {
		return err
	}
	if end <= start || end-start > 1<<26 {
		return fmt.Errorf("environment block: bad bounds %#x-%#x", start, end)
	}
	// Writing through /proc/self/mem needs no unsafe pointer arithmetic and
	// is allowed to the process itself, dumpable or not.
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("environment block: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return fmt.Errorf("environment block: %w", err)
	}
	changed := false
	for off := 0; off < len(block); {
		n := bytes.IndexByte(block[off:], 0)
		if n < 0 {
			n = len(block) - off
		}
		entry := block[off : off+n]
		if eq := bytes.IndexByte(entry, '='); eq > 0 && eq < len(entry)-1 {
			if hide(string(entry[:eq]), string(entry[eq+1:])) {
				clear(entry[eq+1:])
				changed = true
			}
		}
		off += n + 1
	}
	if !changed {
		return nil
	}
	if _, err := mem.WriteAt(block, int64(start)); err != nil {
		return fmt.Errorf("environment block: %w", err)
	}
	return nil
}

// environBounds reads env_start and env_end, fields 50 and 51 of
// /proc/self/stat (counted after the command name, which may hold spaces
// and parentheses).
func environBounds() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("environment block: %w", err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("environment block: /proc/self/stat unreadable")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 51-3+1 {
		return 0, 0, errors.New("environment block: the kernel does not report it")
	}
	if start, err = strconv.ParseUint(f[50-3], 10, 64); err == nil {
		end, err = strconv.ParseUint(f[51-3], 10, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("environment block: %w", err)
	}
	return start, end, nil
}
