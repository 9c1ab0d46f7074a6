package llamaruntime

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// checkELF checks that path is a 64-bit x86-64 shared object: a truncated
// or corrupt file fails to parse (its section headers lie past its end).
func checkELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not a shared library (%v)", filepath.Base(path), err)
	}
	defer f.Close()
	switch {
	case f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64:
		return fmt.Errorf("%s is a %s %s library, not x86-64", filepath.Base(path), f.Class, f.Machine)
	case f.Type != elf.ET_DYN:
		return fmt.Errorf("%s is not a shared library (ELF type %s)", filepath.Base(path), f.Type)
	}
	if _, err := f.DynamicSymbols(); err != nil {
		return fmt.Errorf("%s: unreadable symbol table (%v)", filepath.Base(path), err)
	}
	return nil
}

// checkArch refuses a machine the pinned x86-64 libraries cannot run on.
func checkArch() error {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return errorf(ErrUnsupported, "this is %s/%s; the pinned llama.cpp runtime (%s) is for linux/amd64 (x86-64) only",
			runtime.GOOS, runtime.GOARCH, pinned[CPU].Spec())
	}
	return nil
}

// cpuinfoPath is read for the CPU's flags (tests point it elsewhere).
var cpuinfoPath = "/proc/cpuinfo"

// cpuFlags returns the flags of the first processor in /proc/cpuinfo.
func cpuFlags() (map[string]bool, error) {
	f, err := os.Open(cpuinfoPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "flags" {
			flags := map[string]bool{}
			for _, fl := range strings.Fields(val) {
				flags[fl] = true
			}
			return flags, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s has no flags line", cpuinfoPath)
}

// baselineFlags is what the prebuilt package's least demanding libraries
// need: libggml-base, libggml, libllama and libggml-cpu-x64.so (the CPU
// backend ggml falls back to, scored 1) are plain x86-64 code (no SSE4,
// AVX, POPCNT or SSSE3 instruction in them: objdump of 3.22.1), so the
// x86-64 baseline (SSE2) is all a CPU needs; ggml picks a faster variant
// (sse42 ... sapphirerapids, zen4) when the CPU has its features.
var baselineFlags = []string{"sse2"}

// isaFlag reports whether a /proc/cpuinfo flag names instructions a
// compiler may use with -march=native (so a native build may depend on it).
func isaFlag(f string) bool {
	for _, p := range []string{"sse", "ssse3", "avx", "fma", "f16c", "bmi", "amx", "popcnt", "movbe",
		"adx", "aes", "vaes", "pclmulqdq", "vpclmulqdq", "gfni", "sha_ni", "abm", "xop", "tbm", "cx16",
		"rdrand", "rdseed", "xsave", "clflushopt", "clwb", "prfchw", "lzcnt"} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// nativeCPUFlags are this CPU's instruction-set flags, sorted, recorded in
// a native build's manifest.
func nativeCPUFlags() ([]string, error) {
	flags, err := cpuFlags()
	if err != nil {
		return nil, err
	}
	var out []string
	for f := range flags {
		if isaFlag(f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkCPU refuses a runtime whose libraries this CPU cannot run: the
// architecture, the prebuilt baseline, and for a native build every
// instruction-set flag of the CPU it was built for.
func checkCPU(dir string, m Manifest) error {
	if err := checkArch(); err != nil {
		return err
	}
	flags, err := cpuFlags()
	if err != nil {
		// Without /proc/cpuinfo (a restricted container) nothing can be
		// said: let ggml decide, as node-llama-cpp does.
		return nil
	}
	need := baselineFlags
	what := "the x86-64 baseline its libraries need"
	if m.Variant == Native {
		need = m.CPUFlags
		what = "the CPU it was built for had"
	}
	var missing []string
	for _, f := range need {
		if !flags[f] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		name := "runtime " + dir
		if dir == "" {
			name = "the pinned runtime (" + pinned[CPU].Spec() + ")"
		}
		return errorf(ErrUnsupported, "%s: this CPU lacks %s, which %s", name, strings.Join(missing, " "), what)
	}
	return nil
}

// libDirs are searched for the system's libc.so.6 and libstdc++.so.6.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// systemVersions returns the symbol versions (GLIBC_2.34, GLIBCXX_3.4.29,
// ...) the system's library of that soname defines, and its path.
func systemVersions(soname string) (map[string]bool, string, error) {
	for _, d := range libDirs {
		path := filepath.Join(d, soname)
		f, err := elf.Open(path)
		if err != nil {
			continue
		}
		defs, err := f.DynamicVersions()
		f.Close()
		if err != nil || f.Machine != elf.EM_X86_64 {
			continue
		}
		out := map[string]bool{}
		for _, d := range defs {
			out[d.Name] = true
		}
		return out, path, nil
	}
	return nil, "", errors.New("not found")
}

// checkLibc checks that the system's C and C++ libraries define every
// symbol version the runtime's libraries need (the prebuilt package wants
// glibc 2.34 and libstdc++ from GCC 11 or later).
func checkLibc(dir string, libs []string) error {
	type need struct{ version, lib string }
	needs := map[string][]need{} // soname -> versions
	for _, name := range libs {
		f, err := elf.Open(filepath.Join(dir, name))
		if err != nil {
			return errorf(ErrLibrary, "runtime %s: %s is not a shared library (%v)", dir, name, err)
		}
		vn, err := f.DynamicVersionNeeds()
		f.Close()
		if err != nil {
			continue // no version needs: nothing to check
		}
		for _, n := range vn {
			if n.Name != "libc.so.6" && n.Name != "libstdc++.so.6" {
				continue
			}
			for _, d := range n.Needs {
				needs[n.Name] = append(needs[n.Name], need{d.Dep, name})
			}
		}
	}
	for _, soname := range []string{"libc.so.6", "libstdc++.so.6"} {
		if len(needs[soname]) == 0 {
			continue
		}
		have, path, err := systemVersions(soname)
		if err != nil {
			what := "glibc"
			if soname == "libstdc++.so.6" {
				what = "the GNU C++ library (Debian/Ubuntu: apt-get install libstdc++6)"
			}
			return errorf(ErrUnsupported, "runtime %s needs %s (%s), which this system lacks", dir, soname, what)
		}
		var missing []need
		for _, n := range needs[soname] {
			if !have[n.version] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			slices.SortFunc(missing, func(a, b need) int { return compareVersions(b.version, a.version) })
			return errorf(ErrUnsupported, "runtime %s: %s needs %s, which %s lacks (too old: the runtime wants glibc 2.34 and GCC 11's libstdc++ or later)",
				dir, missing[0].lib, missing[0].version, path)
		}
	}
	return nil
}

// compareVersions orders GLIBC_2.9 before GLIBC_2.34.
func compareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] != pb[i] {
			return pa[i] - pb[i]
		}
	}
	return len(pa) - len(pb)
}

func versionParts(v string) []int {
	_, num, _ := strings.Cut(v, "_")
	var out []int
	for _, p := range strings.Split(num, ".") {
		n, _ := strconv.Atoi(p)
		out = append(out, n)
	}
	return out
}
