package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm/llamaruntime"
	"github.com/tactcli/tact/models"
)

// runtimeInstallOptions is tact runtime install's test seam.
type runtimeInstallOptions struct {
	IO           *iostreams
	S            *config.Settings
	File         string
	CUDA         bool
	Force        bool
	StallTimeout time.Duration
	HTTPClient   *http.Client // tests
}

// newRuntimeInstallCmd makes tact runtime install; runF (nil:
// runtimeInstallRun) runs it, for tests.
func newRuntimeInstallCmd(f *factory, runF func(context.Context, *runtimeInstallOptions) error) *cobra.Command {
	o := &runtimeInstallOptions{IO: f.IO, S: f.Settings}
	cpu, _ := llamaruntime.Pinned(llamaruntime.CPU)
	cuda, _ := llamaruntime.Pinned(llamaruntime.CUDA)
	cmd := &cobra.Command{
		Use:   "install [FILE.tgz]",
		Short: "Install the pinned prebuilt llama.cpp runtime",
		Long: "Install the llama.cpp libraries tact runs: " + cpu.Spec() + " (" + text.DecimalSize(cpu.Size) + "), or with --cuda\n" +
			cuda.Spec() + " (" + text.DecimalSize(cuda.Size) + "; NVIDIA GPUs, with the CUDA 13 runtime and cuBLAS from the\n" +
			"system), into $XDG_DATA_HOME/tact/runtime/" + llamaruntime.Version + "[-cuda], and print that directory.\n" +
			"FILE.tgz is the package's tarball (npm pack " + cpu.Spec() + "); without it, the tarball is\n" +
			"downloaded from the npm registry, or from the mirror $TACT_RUNTIME_URL names (resumed when\n" +
			"interrupted; no data for --stall-timeout gives up). Nothing else downloads it.\n" +
			"The tarball's sha512 must be the one pinned in tact before anything is unpacked; only its shared\n" +
			"libraries and licence are unpacked (an entry with .., an absolute path, a link or a device refuses\n" +
			"the whole tarball), each checked to be an x86-64 shared library this system's C library can load,\n" +
			"in a temporary directory renamed into place: a failure leaves nothing half-installed. An intact\n" +
			"runtime is left alone unless --force. Exit 2 for a bad tarball or an unsupported machine.",
		Example: "  tact runtime install\n" +
			"  npm pack " + cpu.Spec() + " && tact runtime install " + cpu.PackName() + "\n" +
			"  tact runtime install --cuda",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.File = args[0]
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runtimeInstallRun(c.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.CUDA, "cuda", false, "install the CUDA variant ("+cuda.Name+")")
	fl.BoolVar(&o.Force, "force", false, "reinstall an installed, intact runtime")
	fl.DurationVar(&o.StallTimeout, "stall-timeout", llamaruntime.DefaultStallTimeout, "give up a download when no data arrives for this long (connecting included)")
	return cmd
}

func runtimeInstallRun(ctx context.Context, o *runtimeInstallOptions) error {
	s := o.S
	if o.StallTimeout <= 0 {
		return badInputf("--stall-timeout %s: must be positive", o.StallTimeout)
	}
	v := llamaruntime.CPU
	if o.CUDA {
		v = llamaruntime.CUDA
	}
	p, _ := llamaruntime.Pinned(v)
	errOut := o.IO.ErrOut
	in := llamaruntime.InstallOptions{Variant: v, File: o.File, Registry: s.RuntimeURL, HTTPClient: o.HTTPClient,
		StallTimeout: o.StallTimeout, Force: o.Force}
	if !s.Quiet && o.File == "" {
		fmt.Fprintf(errOut, "tact: downloading %s (%s) from %s\n", p.Spec(), text.DecimalSize(p.Size),
			models.SafeURL(llamaruntime.TarballURL(s.RuntimeURL, p)))
		if o.IO.StderrTTY {
			in.Progress = errOut
		}
	}
	res, err := llamaruntime.Install(ctx, in)
	if err != nil {
		return runtimeExit(err)
	}
	if !s.Quiet {
		m := res.Runtime.Manifest
		switch {
		case res.Already:
			fmt.Fprintf(errOut, "tact: %s (llama.cpp %s) is already installed and intact; --force reinstalls it\n", p.Spec(), m.LlamaCpp)
		case res.Replaced != "" && res.Replaced != "--force":
			fmt.Fprintf(errOut, "tact: installed %s (llama.cpp %s), replacing a runtime that was not usable (%s)\n", p.Spec(), m.LlamaCpp, res.Replaced)
		default:
			fmt.Fprintf(errOut, "tact: installed %s (llama.cpp %s)\n", p.Spec(), m.LlamaCpp)
		}
	}
	_, err = fmt.Fprintln(o.IO.Out, res.Runtime.Dir)
	return err
}
