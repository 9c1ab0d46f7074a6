package llamacpp

import (
	"bufio"
	"io"
	"os"
	"runtime"
	"strings"
)

// PhysicalCores counts the machine's physical cores (unique physical id and
// core id pairs in /proc/cpuinfo): llama.cpp runs best with one thread per
// core, since hyperthreads share the core's vector units. It falls back to
// runtime.NumCPU.
func PhysicalCores() int {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.NumCPU()
	}
	defer f.Close()
	if n := countCores(f); n > 0 {
		return n
	}
	return runtime.NumCPU()
}

func countCores(r io.Reader) int {
	cores := map[[2]string]bool{}
	var phys, core string
	flush := func() {
		if core != "" {
			cores[[2]string{phys, core}] = true
		}
		phys, core = "", ""
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			phys = strings.TrimSpace(v)
		case "core id":
			core = strings.TrimSpace(v)
		}
	}
	flush()
	return len(cores)
}
