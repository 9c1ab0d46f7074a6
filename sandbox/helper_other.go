//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// ServeHelper enables nothing outside Linux: there is no Landlock,
// so run_command works only with the sandbox off (and without the helper
// that ends escaped processes).
func ServeHelper() {}

func DetectLandlockABI() int { return 0 }

func Start(Spec, [3]*os.File) (*os.Process, <-chan Report, error) {
	return nil, nil, errors.New("the sandbox helper needs Linux")
}
