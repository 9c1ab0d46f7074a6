//go:build !linux

package exec

import (
	"errors"
	"os"
)

// ServeSandboxHelper enables nothing outside Linux: there is no Landlock,
// so run_command works only with the sandbox off (and without the helper
// that ends escaped processes).
func ServeSandboxHelper() {}

func detectLandlockABI() int { return 0 }

func startHelper(helperSpec, [3]*os.File) (*os.Process, <-chan helperReport, error) {
	return nil, nil, errors.New("the sandbox helper needs Linux")
}
