package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// signalDescendants sends sig to every descendant of pid found in /proc and
// returns how many it signalled. Processes forked meanwhile are caught by
// the caller's next round.
func signalDescendants(pid int, sig syscall.Signal) int {
	n := 0
	for _, d := range descendants(pid) {
		if syscall.Kill(d, sig) == nil {
			n++
		}
	}
	return n
}

// descendants lists the processes below pid (children, their children, and
// so on) from the parent links in /proc/PID/stat.
func descendants(pid int) []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	children := map[int][]int{}
	for _, name := range names {
		p, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/PID/stat: "PID (COMM) STATE PPID
// ...", where COMM may itself contain spaces and parentheses.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(string(f[1]))
	return pp, err == nil
}
