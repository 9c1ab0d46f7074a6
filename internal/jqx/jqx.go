// Package jqx evaluates jq filters (gojq) with hard bounds on time and
// memory, for every place tact runs a filter it did not write: the jq tool,
// plan arguments {"$jq": ...} and --stop-when.
//
// gojq checks its context between instructions, so a time bound stops
// `def f: f; f`, but one instruction can allocate without bound: `"x" *
// 1e9` asks for a gigabyte at once, `.[5e8] = 1` for eight, and deep
// nesting grows the stack until the Go runtime aborts the whole process. No
// check inside the process can stop those, so each evaluation runs in a
// child process: the running executable re-executed with ChildArg, which
// limits its own address space (RLIMIT_AS, enforced by the kernel) before
// it reads the request. A child that hits the limit dies alone, and Eval
// reports "jq: evaluation exceeded 256 MiB"; one that runs too long is
// killed and Eval reports "jq: evaluation exceeded 2s".
//
// Parsing and compiling are bounded too: gojq recurses once per level of
// the filter's syntax tree, and the tree gets deep from nesting ("[[[",
// "(((", string interpolation, if/try/reduce/def) and from plain chains
// (".a|.a|...", "1+1+...", ".a???"), so a filter's depth is bounded only by
// its length. A filter longer than MaxFilterBytes is refused before gojq
// sees it; one up to inProcessBytes compiles in tact (at most about 12 MiB
// of stack and 4 MiB of heap, measured for every shape in the tests); a
// longer one compiles in the child, under the same bounds as evaluation.
//
// The child is served from this package's init, so every binary that links
// jqx (tact, and the test binaries of the packages using it) can serve as
// its own jq child without further wiring.
package jqx

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/itchyny/gojq"

	"github.com/tactcli/tact/internal/procsafe"
	"github.com/tactcli/tact/internal/text"
)

// Default bounds of one evaluation.
const (
	DefaultTimeout = 2 * time.Second
	DefaultMemory  = 256 << 20
)

// MaxFilterBytes is the longest filter tact accepts. Every filter up to it
// compiles within the child's default bounds (the worst shapes measured
// take about 120 MiB or 0.5 s); longer ones are
// refused before parsing: "filter is N bytes, over the 32768-byte limit".
const MaxFilterBytes = 32 << 10

// inProcessBytes is the longest filter compiled in tact itself. gojq's
// cost grows with the syntax tree's depth, which is at most the filter's
// length: up to this size the worst shape measured needs 12 MiB of stack,
// 4 MiB of heap and 30 ms, so validating a plan's filters spawns no
// process for the usual short ones.
const inProcessBytes = 4 << 10

// ChildArg is argv[1] of a process started to evaluate one filter. It is not
// a command users type.
const ChildArg = "__tact-jq"

// Request is one evaluation.
type Request struct {
	Expr string
	// Vars names variables ("$state") bound to VarValues (JSON), in order.
	Vars      []string
	VarValues []json.RawMessage
	// Input is a stream of JSON values; the filter runs over each in turn.
	Input []byte
	// MaxResults stops after this many results (0: all).
	MaxResults int
	// MaxOutput stops once the results' JSON exceeds this many bytes and
	// sets Output.Cut (0: no cap).
	MaxOutput int
	Timeout   time.Duration // 0: DefaultTimeout
	Memory    int64         // bytes; 0: DefaultMemory
}

// Output is what an evaluation produced.
type Output struct {
	Results []json.RawMessage // each result as compact JSON
	Cut     bool              // stopped at MaxOutput
	Halted  bool              // the filter called halt
	// PeakRSS is the child's peak resident memory in bytes (0 if unknown).
	PeakRSS int64
}

// LimitError is an evaluation stopped by a bound.
type LimitError struct {
	Timeout time.Duration // set when time ran out
	Memory  int64         // set when memory ran out
}

func (e *LimitError) Error() string {
	if e.Timeout > 0 {
		return "jq: evaluation exceeded " + shortDuration(e.Timeout)
	}
	return "jq: evaluation exceeded " + sizeString(e.Memory)
}

// FilterError is an error the filter itself raised (error/1, a type error,
// halt_error with a value); Output holds the results before it.
type FilterError struct{ Msg string }

func (e *FilterError) Error() string { return e.Msg }

// CompileError is a filter that does not compile: a syntax or compile
// error (gojq's message), a filter longer than MaxFilterBytes, or one whose
// compilation exceeded the bounds. Its message is one line.
type CompileError struct{ Msg string }

func (e *CompileError) Error() string { return e.Msg }

// Check reports whether expr parses and compiles with the given variables,
// without running it, within bounded time and memory: short filters
// compile in tact, longer ones in a child process (see the package doc).
// Every failure is a *CompileError.
func Check(expr string, vars ...string) error {
	if err := checkSize(expr); err != nil {
		return err
	}
	if len(expr) <= inProcessBytes {
		_, err := compile(expr, vars)
		return err
	}
	_, err := run(context.Background(), Request{Expr: expr, Vars: vars}, true)
	return err
}

// checkSize refuses a filter longer than MaxFilterBytes.
func checkSize(expr string) error {
	if len(expr) > MaxFilterBytes {
		return &CompileError{Msg: fmt.Sprintf("filter is %d bytes, over the %d-byte limit", len(expr), MaxFilterBytes)}
	}
	return nil
}

// compile parses and compiles expr in this process. Only callers that have
// bounded its length call it here (Check, Eval) or in the child.
func compile(expr string, vars []string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, &CompileError{Msg: cutMessage(err.Error())}
	}
	// No environment loader: $ENV and env stay empty, so a filter cannot
	// read tact's environment; no module loader, so no file access.
	code, err := gojq.Compile(q, gojq.WithVariables(vars), gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, &CompileError{Msg: cutMessage(err.Error())}
	}
	return code, nil
}

// maxMessage bounds a compile error's length: gojq quotes the offending
// token, which may be a long string literal or identifier.
const maxMessage = 200

// cutMessage makes gojq's message one line ("invalid escape sequence" quotes
// source bytes as they are, a newline included) of at most maxMessage bytes.
func cutMessage(s string) string {
	s = text.OneLine(s)
	if len(s) > maxMessage {
		s = s[:text.RuneStart(s, maxMessage)] + "..."
	}
	return s
}

// Excerpt is expr quoted for a message, cut to its first 60 bytes (with the
// full length) when longer.
func Excerpt(expr string) string {
	const keep = 60
	if len(expr) <= keep {
		return strconv.Quote(expr)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(expr[:text.RuneStart(expr, keep)]), len(expr))
}

// request is what the parent sends the child on its stdin.
type request struct {
	Expr       string            `json:"expr"`
	Vars       []string          `json:"vars,omitempty"`
	VarValues  []json.RawMessage `json:"var_values,omitempty"`
	Input      string            `json:"input"`
	MaxResults int               `json:"max_results,omitempty"`
	MaxOutput  int               `json:"max_output,omitempty"`
	TimeoutMS  int64             `json:"timeout_ms"`
	// CheckOnly: compile, reply, and stop (Check of a long filter).
	CheckOnly bool `json:"check_only,omitempty"`
}

// reply is one line the child writes on its stdout.
type reply struct {
	V     json.RawMessage `json:"v,omitempty"`
	Error *string         `json:"error,omitempty"`
	Halt  bool            `json:"halt,omitempty"`
	Cut   bool            `json:"cut,omitempty"`
	Done  bool            `json:"done,omitempty"`
	// Compiled is sent once the filter compiled: a bound hit before it is
	// the compilation's.
	Compiled     bool    `json:"compiled,omitempty"`
	CompileError *string `json:"compile_error,omitempty"`
}

// Executable is the program re-executed as the child; tests may replace it.
var Executable = "/proc/self/exe"

// Eval runs one filter in a child process within the request's bounds. The
// error is a *LimitError for a bound, a *FilterError for an error the filter
// raised (with the results before it), a *CompileError when the filter does
// not compile (within the bounds), ctx's error when ctx ended, or another
// error when the child failed.
func Eval(ctx context.Context, r Request) (*Output, error) {
	if err := checkSize(r.Expr); err != nil {
		return nil, err
	}
	// A short filter is compiled here, so a typo costs no process; a long
	// one only in the child.
	if len(r.Expr) <= inProcessBytes {
		if _, err := compile(r.Expr, r.Vars); err != nil {
			return nil, err
		}
	}
	if len(r.Vars) != len(r.VarValues) {
		return nil, errors.New("jqx: one value per variable")
	}
	return run(ctx, r, false)
}

// run evaluates r in a child process, or with checkOnly only compiles it
// there.
func run(ctx context.Context, r Request, checkOnly bool) (*Output, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	memory := r.Memory
	if memory <= 0 {
		memory = DefaultMemory
	}
	body, err := json.Marshal(request{Expr: r.Expr, Vars: r.Vars, VarValues: r.VarValues, Input: string(r.Input),
		MaxResults: r.MaxResults, MaxOutput: r.MaxOutput, TimeoutMS: timeout.Milliseconds(), CheckOnly: checkOnly})
	if err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, Executable, ChildArg)
	// Few threads: each reserves its stack in the bounded address space.
	cmd.Env = []string{childMemEnv + "=" + strconv.FormatInt(memory, 10), "GOMAXPROCS=2"}
	cmd.Stdin = bytes.NewReader(body)
	var stderr capped
	stderr.max = 4096
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive tact
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := procsafe.Seal(); err != nil { // the child gets its three pipes only
		return nil, fmt.Errorf("jq: cannot start the evaluator: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("jq: cannot start the evaluator: %w", err)
	}
	out := &Output{}
	var filterErr error
	done, compiled := false, false
	size := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), maxReplyLine(r.MaxOutput))
	for sc.Scan() {
		var rp reply
		if err := json.Unmarshal(sc.Bytes(), &rp); err != nil {
			break
		}
		switch {
		case rp.CompileError != nil:
			filterErr = &CompileError{Msg: cutMessage(*rp.CompileError)}
		case rp.Compiled:
			compiled = true
		case rp.Error != nil:
			filterErr = &FilterError{Msg: *rp.Error}
		case rp.Halt:
			out.Halted = true
		case rp.Cut:
			out.Cut = true
		case rp.Done:
			done = true
		default:
			size += len(rp.V)
			if r.MaxOutput > 0 && size > r.MaxOutput {
				out.Cut = true
				continue
			}
			out.Results = append(out.Results, rp.V)
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && cmd.ProcessState != nil {
		out.PeakRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	switch {
	case done && waitErr == nil:
		return out, filterErr
	case ctx.Err() != nil:
		return out, ctx.Err()
	case runCtx.Err() != nil && !compiled:
		return out, &CompileError{Msg: "compiling the filter exceeded " + shortDuration(timeout)}
	case runCtx.Err() != nil:
		return out, &LimitError{Timeout: timeout}
	case stderr.outOfMemory() && !compiled:
		return out, &CompileError{Msg: "compiling the filter exceeded " + sizeString(memory)}
	case stderr.outOfMemory():
		return out, &LimitError{Memory: memory}
	}
	msg := firstLine(stderr.String())
	if msg == "" && waitErr != nil {
		msg = waitErr.Error()
	}
	return out, fmt.Errorf("jq: the evaluator failed: %s", msg)
}

// maxReplyLine bounds one line from the child: a result may be as large as
// the output cap, or as the memory bound when there is none.
func maxReplyLine(maxOutput int) int {
	if maxOutput > 0 {
		return maxOutput + 1024
	}
	return DefaultMemory
}

// capped keeps the first max bytes written (the child's stderr).
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// outOfMemory recognises the Go runtime's messages for a failed allocation
// or an overgrown stack, which is where RLIMIT_DATA ends the child.
func (c *capped) outOfMemory() bool {
	s := c.String()
	return strings.Contains(s, "out of memory") || strings.Contains(s, "stack exceeds") ||
		strings.Contains(s, "stack overflow") || strings.Contains(s, "cannot allocate memory") || strings.Contains(s, "cannot map pages") ||
		strings.Contains(s, "failed to create new OS thread")
}

func firstLine(s string) string { return text.FirstLine(strings.TrimSpace(s)) }

func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func sizeString(n int64) string { return text.BinarySize(uint64(max(n, 0))) }
