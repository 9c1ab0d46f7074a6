package jqx

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
	"golang.org/x/sys/unix"
)

// childMemEnv carries the memory bound to the child; its environment holds
// nothing else, so $ENV and env are empty for filters anyway.
const childMemEnv = "TACT_JQX_MEMORY"

// childSlack is room above the bound for the runtime's own threads and
// bookkeeping, so the filter's data gets the whole bound.
const childSlack = 32 << 20

func init() {
	// The re-executed binary does nothing but evaluate: it exits here,
	// before main (or a test binary's TestMain) runs.
	if len(os.Args) == 2 && os.Args[1] == ChildArg {
		os.Exit(serveChild(os.Stdin, os.Stdout))
	}
}

func serveChild(in io.Reader, stdout io.Writer) int {
	mem, err := strconv.ParseInt(os.Getenv(childMemEnv), 10, 64)
	if err != nil || mem <= 0 {
		mem = DefaultMemory
	}
	if err := limitAddressSpace(mem + childSlack); err != nil {
		fmt.Fprintln(os.Stderr, "jq evaluator:", err)
		return 2
	}
	// The garbage collector works harder near the bound instead of letting
	// garbage push the process into it; deep recursion stops at the bound
	// too ("stack exceeds"), instead of at the runtime's 1 GB default.
	debug.SetMemoryLimit(mem)
	debug.SetMaxStack(int(mem))

	w := bufio.NewWriter(stdout)
	defer w.Flush()
	send := func(r reply) {
		b, _ := json.Marshal(r)
		w.Write(b)
		w.WriteByte('\n')
	}
	fail := func(msg string) int {
		send(reply{Error: &msg})
		send(reply{Done: true})
		return 0
	}
	failCompile := func(msg string) int {
		send(reply{CompileError: &msg})
		send(reply{Done: true})
		return 0
	}

	var req request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "jq evaluator: bad request:", err)
		return 2
	}
	// Compiled here under the bounds: the parent compiles only short
	// filters itself.
	if err := checkSize(req.Expr); err != nil {
		return failCompile(err.Error())
	}
	code, err := compile(req.Expr, req.Vars)
	if err != nil {
		return failCompile(err.Error())
	}
	send(reply{Compiled: true})
	w.Flush() // now: a bound hit later is the evaluation's
	if req.CheckOnly {
		send(reply{Done: true})
		return 0
	}
	vars := make([]any, len(req.VarValues))
	for i, raw := range req.VarValues {
		if vars[i], err = decodeOne(raw); err != nil {
			return fail(fmt.Sprintf("variable %s: %v", req.Vars[i], err))
		}
	}
	inputs, err := DecodeStream([]byte(req.Input))
	if err != nil {
		return fail(fmt.Sprintf("input is not valid JSON: %v", err))
	}
	req.Input = "" // the decoded values are all that is needed now

	// The parent kills the child at the deadline; this bound only matters
	// if the parent is gone.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond+time.Second)
	defer cancel()
	results, size := 0, 0
	for _, v := range inputs {
		iter := code.RunWithContext(ctx, v, vars...)
		for {
			r, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := r.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					send(reply{Halt: true}) // plain halt: stop quietly
					send(reply{Done: true})
					return 0
				}
				return fail(err.Error())
			}
			b, err := gojq.Marshal(r)
			if err != nil {
				return fail("encode result: " + err.Error())
			}
			size += len(b)
			if req.MaxOutput > 0 && size > req.MaxOutput {
				send(reply{Cut: true})
				send(reply{Done: true})
				return 0
			}
			send(reply{V: b})
			if results++; req.MaxResults > 0 && results >= req.MaxResults {
				send(reply{Done: true})
				return 0
			}
		}
	}
	send(reply{Done: true})
	return 0
}

// limitAddressSpace caps the process's address space (RLIMIT_AS) at what it
// has mapped now plus extra bytes. Past it, an allocation fails and the
// runtime exits with "out of memory", however large the single allocation
// was. (RLIMIT_DATA would be the narrower limit, but the kernel does not
// charge it when a reserved PROT_NONE range becomes writable, which is how
// the Go runtime grows its heap.)
func limitAddressSpace(extra int64) error {
	used, err := procStatus("VmSize")
	if err != nil {
		return err
	}
	lim := uint64(used + extra)
	return unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: lim})
}

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(field string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %v", field, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// DecodeStream parses every JSON value in data (jq reads a stream). Numbers
// stay json.Number, so big integers survive; gojq understands them.
func DecodeStream(data []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var values []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		return nil, errors.New("no JSON value")
	}
	return values, nil
}

func decodeOne(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
