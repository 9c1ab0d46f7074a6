package llamaruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNoNpm: npm is not installed (NpmPack needs it).
var ErrNoNpm = errors.New("npm is not installed")

// NpmPack returns the path of p's tarball in dir, running `npm pack` into
// dir first when it is not there yet (tests and make use it: the registry
// through npm's own client and configuration). The tarball's integrity is
// checked either way; concurrent callers take turns (dir/.lock).
func NpmPack(ctx context.Context, dir string, p Package) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", dir, err)
	}
	path := filepath.Join(dir, p.PackName())
	if sum, err := integrity(path); err == nil && sum == p.Integrity {
		return path, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("npm pack %s: %w", p.Spec(), ErrNoNpm)
	}
	os.Remove(path)
	out, err := exec.CommandContext(ctx, "npm", "pack", "--silent", "--pack-destination", dir, p.Spec()).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %v: %s", p.Spec(), err, strings.TrimSpace(string(out)))
	}
	sum, err := integrity(path)
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w (it printed %q)", p.Spec(), err, strings.TrimSpace(string(out)))
	}
	if sum != p.Integrity {
		os.Remove(path)
		return "", errorf(ErrIntegrity, "npm pack %s: the tarball's sha512 is %s, want %s", p.Spec(), sum, p.Integrity)
	}
	return path, nil
}
