package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm/llamaruntime"
	"github.com/tactcli/tact/models"
)

// runtimeBuildOptions is tact runtime build's test seam.
type runtimeBuildOptions struct {
	IO           *iostreams
	S            *config.Settings
	File         string
	Jobs         int
	WorkDir      string
	Force        bool
	StallTimeout time.Duration
}

// newRuntimeBuildCmd makes tact runtime build; runF (nil: runtimeBuildRun)
// runs it, for tests.
func newRuntimeBuildCmd(f *factory, runF func(context.Context, *runtimeBuildOptions) error) *cobra.Command {
	o := &runtimeBuildOptions{IO: f.IO, S: f.Settings}
	src := llamaruntime.Source
	cmd := &cobra.Command{
		Use:   "build [FILE.tgz]",
		Short: "Build the pinned llama.cpp release for this CPU",
		Long: "Build llama.cpp " + llamaruntime.LlamaCppRelease + " (the release the prebuilt runtime carries) with this CPU's own\n" +
			"instruction set (GGML_NATIVE), from the source " + src.Spec() + " carries for its own source builds\n" +
			"(with its patches), and install the libraries as the runtime " + llamaruntime.Version + "-native, which tact then\n" +
			"prefers; print its directory. FILE.tgz is that package's tarball (npm pack " + src.Spec() + ",\n" +
			text.DecimalSize(src.Size) + "); without it, it is downloaded as tact runtime install downloads (the npm registry\n" +
			"or $TACT_RUNTIME_URL), its sha512 checked before anything is unpacked. Needs cmake, a C/C++\n" +
			"compiler and git (Debian/Ubuntu: apt-get install cmake build-essential git); takes minutes\n" +
			"(--jobs: parallel compiles, default the CPUs). The source and build stay in --work-dir, so a\n" +
			"failed or interrupted build resumes; the compiler's output is in its build.log (and on stderr\n" +
			"with --verbose). The runtime records this CPU's instruction-set flags: on a CPU lacking one\n" +
			"tact passes it over for the prebuilt runtime.",
		Example: "  tact runtime build\n" +
			"  npm pack " + src.Spec() + " && tact runtime build " + src.PackName(),
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.File = args[0]
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runtimeBuildRun(c.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Jobs, "jobs", 0, "parallel compile jobs (default: the number of CPUs)")
	fl.StringVar(&o.WorkDir, "work-dir", "", "`DIR` for the source and the build (default $XDG_CACHE_HOME/tact/runtime-build/"+llamaruntime.Version+")")
	fl.BoolVar(&o.Force, "force", false, "rebuild when a native runtime for this CPU is installed")
	fl.DurationVar(&o.StallTimeout, "stall-timeout", llamaruntime.DefaultStallTimeout, "give up a download when no data arrives for this long (connecting included)")
	return cmd
}

func runtimeBuildRun(ctx context.Context, o *runtimeBuildOptions) error {
	s := o.S
	if o.Jobs < 0 {
		return badInputf("--jobs %d: must be 0 (the CPUs) or more", o.Jobs)
	}
	if o.StallTimeout <= 0 {
		return badInputf("--stall-timeout %s: must be positive", o.StallTimeout)
	}
	errOut := o.IO.ErrOut
	b := llamaruntime.BuildOptions{File: o.File, Registry: s.RuntimeURL, WorkDir: o.WorkDir, Jobs: o.Jobs,
		StallTimeout: o.StallTimeout, Force: o.Force}
	if !s.Quiet {
		b.Progress = prefixed{errOut}
		if o.File == "" {
			if o.IO.StderrTTY {
				b.Bar = errOut
			}
			src := llamaruntime.Source
			fmt.Fprintf(errOut, "tact: downloading %s (%s) from %s\n", src.Spec(), text.DecimalSize(src.Size),
				models.SafeURL(llamaruntime.TarballURL(s.RuntimeURL, src)))
		}
	}
	if s.Verbose {
		b.Log = errOut
	}
	res, err := llamaruntime.Build(ctx, b)
	if err != nil {
		return runtimeExit(err)
	}
	if !s.Quiet {
		if res.Already {
			fmt.Fprintf(errOut, "tact: a native runtime for this CPU is installed (llama.cpp %s); --force rebuilds it\n", res.Runtime.Manifest.LlamaCpp)
		} else {
			fmt.Fprintf(errOut, "tact: built llama.cpp %s for this CPU in %s (%s); tact now uses it\n",
				res.Runtime.Manifest.LlamaCpp, res.Took.Round(time.Second), res.Compiler)
		}
	}
	_, err = fmt.Fprintln(o.IO.Out, res.Runtime.Dir)
	return err
}

// prefixed writes each stage line Build reports as "tact: LINE".
type prefixed struct{ w io.Writer }

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(p.w, "tact: %s", b); err != nil {
		return 0, err
	}
	return len(b), nil
}
