package main

import (
	"bytes"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/react"
)

// maxContextFileBytes caps one -f input as read; what reaches the model is
// then cut to the window (react.ContextFile).
const maxContextFileBytes = 64 << 20

// binarySniff is how many leading bytes are checked for a NUL byte to call
// an input binary (read_file's and git's heuristic).
const binarySniff = 8000

// stdinName is how -f - is named to the model and in records.
const stdinName = "standard input"

// addFileFlag: -f, the context files of this invocation (run, exec, plan).
// No variable: it names this invocation's input, like --resume.
func addFileFlag(f *pflag.FlagSet, paths *[]string) {
	defer helpGroup(f, "Input and output")()
	f.StringArrayVarP(paths, "file", "f", nil, "give the model the text file `PATH` as context, in the task message (repeatable; - reads standard input; cut to fit the context window)")
}

// stdinTaken reports whether -f - reads standard input, which then cannot
// also hold the query or the plan.
func stdinTaken(paths []string) bool {
	for _, p := range paths {
		if p == "-" {
			return true
		}
	}
	return false
}

// readsStdin reports whether args leave the query or plan to standard
// input (none, or "-").
func readsStdin(args []string) bool {
	return len(args) == 0 || (len(args) == 1 && args[0] == "-")
}

// readContextFiles reads the -f inputs: regular text files anywhere the
// user can read (the user named them), or standard input once. A binary
// input, a missing file or one over the cap is bad input (exit 2).
func readContextFiles(ios *iostreams, paths []string) ([]react.ContextFile, error) {
	var out []react.ContextFile
	stdin := false
	for _, p := range paths {
		var (
			data []byte
			err  error
			cf   react.ContextFile
		)
		if p == "-" {
			if stdin {
				return nil, badInputf("-f -: standard input can be given once")
			}
			stdin = true
			cf.Name = stdinName
			data, err = io.ReadAll(io.LimitReader(ios.In, maxContextFileBytes+1))
			if err != nil {
				return nil, badInputf("-f -: reading standard input: %v", err)
			}
			if len(data) > maxContextFileBytes {
				return nil, badInputf("-f -: standard input is larger than the %s cap", filekind.Size(maxContextFileBytes))
			}
		} else {
			cf.Name = p
			data, err = filekind.ReadFile(filekind.Spec{What: "-f", Max: maxContextFileBytes}, p)
			if err != nil {
				return nil, badInput(err)
			}
			// The real path: a file inside the workspace gets read_file's
			// hint when it is cut.
			if abs, err := filepath.Abs(p); err == nil {
				if real, err := filepath.EvalSymlinks(abs); err == nil {
					cf.Path = real
				}
			}
		}
		if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
			return nil, badInputf("-f %s: looks binary (a NUL byte in the first %d bytes); -f takes text files", cf.Name, binarySniff)
		}
		cf.Text = string(data)
		out = append(out, cf)
	}
	return out, nil
}

// stdinConflict is the error of a query or plan left to standard input
// while -f - reads it; give says how to give it instead.
func stdinConflict(give string) error {
	return badInputf("-f - reads standard input: %s", give)
}
