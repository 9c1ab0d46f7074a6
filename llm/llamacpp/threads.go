package llamacpp

import "github.com/tactcli/tact/internal/threads"

// PhysicalCores counts the physical cores this process may run on (see
// threads.PhysicalCores). The default thread count also weighs the load:
// threads.Default.
func PhysicalCores() int { return threads.PhysicalCores() }
