package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The prompt cache section (-only promptcache): a cron-like pair of
// identical `tact run` processes on the bench model, the first with an
// empty prompt cache (cold: it evaluates the system prompt and saves its
// KV state), the second finding the first's file (warm: it loads it), plus
// the same run with --no-prompt-cache as the reference. Each is measured
// from the process's start to its first model reply (the trace's first
// event after the first model_call: the reply parsed), to the end of that
// reply's prompt (the reply's time less its generation, from the debug
// log's "llama call" line: the first token follows at once), and whole;
// the file's size and the save and load times come from the cache
// directory and the debug log. -pc-repeat pairs, each on an empty cache;
// the medians count.

// pcRun is one process of the section.
type pcRun struct {
	first, wall   time.Duration
	promptDone    time.Duration // first less its generation time
	evaluated     int           // prompt tokens the first model call evaluated
	disk          int           // of its prompt, tokens from the disk cache
	saveMS        float64
	loadMS        float64
	cacheDirBytes int64
}

type pcResult struct {
	cold, warm, off []pcRun
	files           int
}

var (
	logMS   = regexp.MustCompile(`msg="prompt cache (saved|loaded)" tokens=\d+ bytes=\d+ ms=([0-9.]+)`)
	logCall = regexp.MustCompile(`msg="llama call" .* ms=(\d+)`)
)

func promptCacheBench(model string, threads int) (*pcResult, error) {
	c, cleanup, err := newConcBench(model, threads)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res := &pcResult{}
	for i := range *pcRepeatFlag {
		cache := filepath.Join(c.work, fmt.Sprintf("cache-%d", i))
		progress("prompt cache %d/%d: cold run", i+1, *pcRepeatFlag)
		cold, err := c.pcRunOne(cache, false)
		if err != nil {
			return nil, err
		}
		progress("prompt cache %d/%d: warm run", i+1, *pcRepeatFlag)
		warm, err := c.pcRunOne(cache, false)
		if err != nil {
			return nil, err
		}
		progress("prompt cache %d/%d: --no-prompt-cache", i+1, *pcRepeatFlag)
		off, err := c.pcRunOne(filepath.Join(c.work, fmt.Sprintf("off-%d", i)), true)
		if err != nil {
			return nil, err
		}
		if cold.disk != 0 || warm.disk == 0 || off.disk != 0 {
			return nil, fmt.Errorf("prompt cache: tokens from disk cold %d, warm %d, off %d; want 0, >0, 0", cold.disk, warm.disk, off.disk)
		}
		files, _ := filepath.Glob(filepath.Join(cache, "tact", "kv", "*.kv"))
		res.files = len(files)
		res.cold, res.warm, res.off = append(res.cold, cold), append(res.warm, warm), append(res.off, off)
	}
	return res, nil
}

// pcRunOne runs one `tact run` with the cache in cacheHome (or none).
func (c *concBench) pcRunOne(cacheHome string, off bool) (pcRun, error) {
	trace := filepath.Join(c.work, "pc-trace.jsonl")
	os.Remove(trace)
	args := append([]string{}, tactArgs[:1]...)
	args = append(args, "--model", c.model, "--workspace", filepath.Join(c.work, "ws"), "--trace", trace, "-v")
	if c.threads > 0 {
		args = append(args, "--threads", strconv.Itoa(c.threads))
	}
	if off {
		args = append(args, "--no-prompt-cache")
	}
	args = append(args, tactArgs[1:]...)
	cmd := exec.CommandContext(context.Background(), c.tact, args...)
	cmd.Env = append(c.baseEnv(), "TACT_CPU_LOCK=true", "XDG_CACHE_HOME="+cacheHome)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	_, err := cmd.Output()
	r := pcRun{wall: time.Since(start)}
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || !slices.Contains([]int{3, 4, 5}, ee.ExitCode())) {
		return r, fmt.Errorf("tact: %v: %s", err, lastLines(stderr.String(), 5))
	}
	if err := r.readTrace(trace, start); err != nil {
		return r, err
	}
	for _, m := range logMS.FindAllStringSubmatch(stderr.String(), -1) {
		ms, _ := strconv.ParseFloat(m[2], 64)
		if m[1] == "saved" {
			r.saveMS += ms
		} else {
			r.loadMS += ms
		}
	}
	m := logCall.FindStringSubmatch(stderr.String())
	if m == nil {
		return r, errors.New("tact -v: no llama call line")
	}
	gen, _ := strconv.Atoi(m[1])
	r.promptDone = r.first - time.Duration(gen)*time.Millisecond
	filepath.Walk(cacheHome, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			r.cacheDirBytes += info.Size()
		}
		return nil
	})
	return r, nil
}

// readTrace finds the first model reply: the event right after the first
// model_call, and that call's usage (its step).
func (r *pcRun) readTrace(path string, start time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	called := false
	for sc.Scan() {
		var ev struct {
			Event string    `json:"event"`
			Time  time.Time `json:"time"`
			Step  *struct {
				TokenUsage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CachedTokens     int `json:"cached_tokens"`
					DiskCachedTokens int `json:"disk_cached_tokens"`
				} `json:"token_usage"`
			} `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		if called && r.first == 0 {
			r.first = ev.Time.Sub(start)
		}
		if ev.Event == "model_call" {
			called = true
		}
		if ev.Event == "step" && ev.Step != nil {
			u := ev.Step.TokenUsage
			r.evaluated, r.disk = u.PromptTokens, u.DiskCachedTokens
			return nil
		}
	}
	if r.first == 0 {
		return errors.New("trace: no model reply")
	}
	return sc.Err()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func pcMedian[T int | int64 | float64 | time.Duration](runs []pcRun, f func(pcRun) T) T {
	v := make([]T, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func reportPromptCache(r *pcResult) {
	first := func(p pcRun) time.Duration { return p.first }
	ready := func(p pcRun) time.Duration { return p.promptDone }
	wall := func(p pcRun) time.Duration { return p.wall }
	cold, warm, off := pcMedian(r.cold, first), pcMedian(r.warm, first), pcMedian(r.off, first)
	ratio := warm.Seconds() / cold.Seconds()
	readyRatio := pcMedian(r.warm, ready).Seconds() / pcMedian(r.cold, ready).Seconds()
	verdict := func(x float64) string {
		if x > 0.25 {
			return "**not met**"
		}
		return "met"
	}
	fmt.Printf("\n### Prompt cache: two identical `tact run` processes (cron-like)\n\n")
	fmt.Printf("Each run: `tact %s` on the bench model; medians of %d pairs, each on an empty cache.\n\n", strings.Join(tactArgs, " "), len(r.cold))
	fmt.Println("| run | first reply's prompt evaluated (first token) | first model reply complete | whole run | first call: prompt tokens evaluated | from the disk cache |")
	fmt.Println("|---|---|---|---|---|---|")
	row := func(name string, runs []pcRun) {
		fmt.Printf("| %s | %.2f s | %.2f s | %.2f s | %d | %d |\n", name, pcMedian(runs, ready).Seconds(), pcMedian(runs, first).Seconds(), pcMedian(runs, wall).Seconds(),
			pcMedian(runs, func(p pcRun) int { return p.evaluated }), pcMedian(runs, func(p pcRun) int { return p.disk }))
	}
	row("cold (empty cache: evaluates and saves)", r.cold)
	row("warm (the second run: loads)", r.warm)
	row("`--no-prompt-cache`", r.off)
	fmt.Printf("\nWarm / cold, from the process's start: to the first reply's first token %.3f (target ≤ 0.25: %s), to the complete first reply %.3f (%s; its generation takes the same time warm or cold). Cold against `--no-prompt-cache`: %+.0f ms (the save).\n",
		readyRatio, verdict(readyRatio), ratio, verdict(ratio), float64((cold-off).Microseconds())/1000)
	fmt.Printf("Cache: %d files, %.1f MB (the executor's system prompt and tools, %d tokens); save %.1f ms, load %.1f ms (medians).\n",
		r.files, float64(pcMedian(r.cold, func(p pcRun) int64 { return p.cacheDirBytes }))/1e6,
		pcMedian(r.warm, func(p pcRun) int { return p.disk }),
		pcMedian(r.cold, func(p pcRun) float64 { return p.saveMS }), pcMedian(r.warm, func(p pcRun) float64 { return p.loadMS }))
}
