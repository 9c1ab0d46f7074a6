package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm/llamalib"
	"github.com/tactcli/tact/llm/llamaruntime"
)

// runtimeOptions is tact runtime's test seam.
type runtimeOptions struct {
	IO   *iostreams
	S    *config.Settings
	JSON bool
}

// newRuntimeCmd makes tact runtime: list the installed llama.cpp runtimes
// and which one is in use; install and build are its subcommands.
func newRuntimeCmd(f *factory, runF func(context.Context, *runtimeOptions) error) *cobra.Command {
	o := &runtimeOptions{IO: f.IO, S: f.Settings}
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "List, install and build the llama.cpp runtime",
		Long: "The llama backend runs llama.cpp's shared libraries: the prebuilt ones node-llama-cpp " + llamaruntime.Version + "\n" +
			"ships on npm (llama.cpp " + llamaruntime.LlamaCppRelease + "), installed by tact runtime install, or the same release built\n" +
			"for this CPU by tact runtime build. Without a subcommand, list the runtimes under\n" +
			"$XDG_DATA_HOME/tact/runtime, each checked (manifest, version, every file's checksum, this CPU\n" +
			"and C library), and say which one tact uses: $TACT_RUNTIME_DIR when set, else the native build,\n" +
			"then the CUDA one, then the prebuilt one. See docs/runtime.md.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runtimeRun(c.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "one JSON object per runtime and line")
	cmd.AddCommand(newRuntimeInstallCmd(f, nil), newRuntimeBuildCmd(f, nil))
	return cmd
}

// runtimeRow is one runtime in tact runtime's listing (--json).
type runtimeRow struct {
	Name      string   `json:"name"`
	Dir       string   `json:"dir"`
	Package   string   `json:"package,omitempty"`
	Version   string   `json:"version,omitempty"`
	LlamaCpp  string   `json:"llama_cpp,omitempty"`
	Variant   string   `json:"variant,omitempty"`
	CPULibs   []string `json:"cpu_libraries,omitempty"`
	InUse     bool     `json:"in_use"`
	Why       string   `json:"why,omitempty"`
	Error     string   `json:"error,omitempty"`
	Installed string   `json:"installed,omitempty"`
}

func runtimeRun(ctx context.Context, o *runtimeOptions) error {
	s := o.S
	root := llamaruntime.DefaultRoot()
	var entries []llamaruntime.Entry
	var inUse llamaruntime.Runtime
	var locErr error
	err := untilCancelled(ctx, "runtime", func() (err error) {
		entries, err = llamaruntime.List(root)
		if err != nil {
			return err
		}
		inUse, locErr = llamaruntime.Locate(llamaruntime.LocateOptions{Root: root, Dir: s.RuntimeDir})
		return nil
	})
	if err != nil {
		return err
	}
	var rows []runtimeRow
	for _, e := range entries {
		m := e.Manifest
		r := runtimeRow{Name: filepath.Base(e.Dir), Dir: e.Dir, Package: m.Package, Version: m.Version, LlamaCpp: m.LlamaCpp,
			Variant: string(m.Variant), CPULibs: m.CPUBackends(), InUse: locErr == nil && e.Dir == inUse.Dir}
		if !m.Installed.IsZero() {
			r.Installed = m.Installed.Format("2006-01-02 15:04:05Z")
		}
		if r.InUse {
			r.Why = inUse.Why
		}
		if e.Err != nil {
			r.Error = e.Err.Error()
		}
		rows = append(rows, r)
	}
	// TACT_RUNTIME_DIR may name a runtime outside the root.
	if locErr == nil && s.RuntimeDir != "" {
		m := inUse.Manifest
		rows = append(rows, runtimeRow{Name: filepath.Base(inUse.Dir), Dir: inUse.Dir, Package: m.Package, Version: m.Version,
			LlamaCpp: m.LlamaCpp, Variant: string(m.Variant), CPULibs: m.CPUBackends(), InUse: true, Why: inUse.Why})
	}
	out := o.IO.Out
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RUNTIME\tLLAMA.CPP\tVARIANT\tFROM\tSTATE")
		for _, r := range rows {
			name, state := r.Name, "ok"
			if r.InUse {
				name += " *"
				state = "in use: " + r.Why
			}
			if r.Error != "" {
				state = r.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, dashIfEmpty(r.LlamaCpp), dashIfEmpty(r.Variant), from(r), state)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if locErr != nil {
		// Not an error of this command: it lists what there is and says
		// what tact run would say.
		fmt.Fprintf(o.IO.ErrOut, "tact: %s\n", locErr)
		return nil
	}
	if !s.Quiet {
		fmt.Fprintf(o.IO.ErrOut, "* in use: %s\n", inUse.Dir)
		if libs := inUse.Manifest.CPUBackends(); len(libs) > 1 {
			fmt.Fprintf(o.IO.ErrOut, "  CPU libraries: %d (%s); ggml picks the best this CPU runs when it loads\n", len(libs), strings.Join(trimLibs(libs), " "))
		}
		for _, line := range loadedBackends(inUse) {
			fmt.Fprintf(o.IO.ErrOut, "  %s\n", line)
		}
	}
	return nil
}

// loadedBackends loads the runtime as the llama backend would and says
// which CPU library ggml chose (and its features) and which GPUs it found.
func loadedBackends(r llamaruntime.Runtime) []string {
	lib, err := llamalib.Open(r.Dir, "")
	if err != nil {
		return []string{"ggml's CPU library: the runtime does not load: " + err.Error()}
	}
	name, features := lib.CPUBackend()
	if name == "" {
		name = "unknown"
	}
	lines := []string{fmt.Sprintf("ggml's CPU library: %s (%s)", name, strings.Join(features, " "))}
	var gpus []string
	for _, d := range lib.GPUs() {
		gpus = append(gpus, d.Name+" ("+d.Description+")")
	}
	switch {
	case len(gpus) > 0:
		lines = append(lines, "GPUs: "+strings.Join(gpus, ", "))
	case r.Manifest.Variant == llamaruntime.CUDA:
		lines = append(lines, fmt.Sprintf("GPUs: none: ggml did not load the CUDA backend, which needs an NVIDIA GPU and driver and libcudart.so.13 and libcublas.so.13 where the loader finds them (ldd %s shows what is missing)",
			r.Path("libggml-cuda.so")))
	}
	return lines
}

// from is where a runtime came from: the npm package, or a native build.
func from(r runtimeRow) string {
	switch {
	case r.Package == "":
		return "-"
	case r.Variant == string(llamaruntime.Native):
		return "built from " + r.Package + "@" + r.Version
	}
	return r.Package + "@" + r.Version
}

// trimLibs shortens libggml-cpu-haswell.so to haswell.
func trimLibs(libs []string) []string {
	out := make([]string, len(libs))
	for i, l := range libs {
		l = strings.TrimSuffix(strings.TrimPrefix(l, "libggml-cpu"), ".so")
		out[i] = strings.TrimPrefix(l, "-")
		if out[i] == "" {
			out[i] = "native"
		}
	}
	return out
}

// runtimeExit maps a runtime install or build error to its exit code: a
// bad tarball, a corrupt or foreign runtime, an unsupported machine are
// bad input (2), an interruption 130, anything else (a download, a build
// that failed) 1.
func runtimeExit(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return &exitError{Code: 130, Err: err}
	case errors.Is(err, llamaruntime.ErrIntegrity), errors.Is(err, llamaruntime.ErrArchive),
		errors.Is(err, llamaruntime.ErrLibrary), errors.Is(err, llamaruntime.ErrVersion),
		errors.Is(err, llamaruntime.ErrUnsupported), errors.Is(err, llamaruntime.ErrNotInstalled):
		return badInput(err)
	}
	return err
}
