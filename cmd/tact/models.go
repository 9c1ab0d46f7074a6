package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm/chattemplate"
	"github.com/tactcli/tact/models"
)

// newModelsCmd is `tact models`: list, show and pull GGUF models in the
// models directory.
func newModelsCmd(f *factory) *cobra.Command {
	s := f.Settings
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List, inspect and download GGUF models",
		Long: "Manage the GGUF models in the models directory ($TACT_MODELS_DIR, default\n" +
			"$XDG_DATA_HOME/tact/models). A model NAME (tact run --model NAME, tact models show NAME)\n" +
			"is NAME or NAME.gguf there. Only regular files (or symlinks to them) are models: a FIFO,\n" +
			"device, socket or directory named *.gguf is refused without being opened.",
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&s.ModelsDir, "models-dir", s.ModelsDir, "models `DIR` (default $TACT_MODELS_DIR, else $XDG_DATA_HOME/tact/models)")
	cmd.AddCommand(newModelsListCmd(f, nil), newModelsShowCmd(f, nil), newModelsPullCmd(f, nil), newModelsCatalogCmd(f, nil), newModelsCacheCmd(f))
	return cmd
}

// modelsListOptions is tact models list's test seam.
type modelsListOptions struct {
	IO   *iostreams
	S    *config.Settings
	JSON bool
}

// newModelsListCmd makes tact models list; runF (nil: modelsListRun) runs
// it, for tests.
func newModelsListCmd(f *factory, runF func(context.Context, *modelsListOptions) error) *cobra.Command {
	o := &modelsListOptions{IO: f.IO, S: f.Settings}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the models in the models directory",
		Long: "List the models in the models directory as a table, or with --json as one JSON object per line.\n" +
			"A *.gguf entry that is not a usable model (not a GGUF file, or not a regular file: a FIFO,\n" +
			"device, socket or directory, which is never opened) is listed too, with ? columns and its\n" +
			"error as a warning on stderr (with --json, in its \"error\" field).",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return modelsListRun(c.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "one JSON object per model and line")
	return cmd
}

func modelsListRun(ctx context.Context, o *modelsListOptions) error {
	s := o.S
	dir := s.ModelsDirectory()
	var infos []models.Info
	err := untilCancelled(ctx, "models list", func() (err error) {
		infos, err = models.List(dir)
		return err
	})
	if err != nil {
		return err
	}
	out, errOut := o.IO.Out, o.IO.ErrOut
	if o.JSON {
		enc := json.NewEncoder(termJSONWriter{out}) // names and metadata come from the files
		enc.SetEscapeHTML(false)
		for _, in := range infos {
			if err := enc.Encode(in); err != nil {
				return err
			}
		}
		return nil
	}
	if len(infos) == 0 {
		if !s.Quiet {
			fmt.Fprintf(errOut, "no models in %s; add one with: tact models pull %s (see tact models catalog)\n", dir, models.DefaultCatalogEntry().Name)
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tARCH\tPARAMS\tQUANT\tCTX\tSIZE")
	for _, in := range infos {
		if in.Error != "" {
			size := "-" // nothing to measure: not a regular file, or empty
			if in.Size > 0 {
				size = fmtFileSize(in.Size)
			}
			fmt.Fprintf(tw, "%s\t?\t?\t?\t?\t%s\n", termCell(in.Name), size)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termCell(in.Name), termCell(in.Architecture), fmtParamCount(in.ParameterCount),
			termCell(dashIfEmpty(in.Quantization)), dashIfEmpty(fmtCount(in.ContextLength)), fmtFileSize(in.Size))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, in := range infos {
		if in.Error != "" {
			fmt.Fprintf(errOut, "tact: warning: %s\n", termLine(in.Error))
		}
	}
	return nil
}

// modelDetails is `models show --json`: the model's metadata plus the chat
// format tact will use for it.
type modelDetails struct {
	models.Info
	ChatFormat        string `json:"chat_format"`
	ChatFormatWarning string `json:"chat_format_warning,omitempty"`
}

// modelsShowOptions is tact models show's test seam.
type modelsShowOptions struct {
	IO   *iostreams
	S    *config.Settings
	Args []string // the model NAME or PATH, if given
	JSON bool
}

// newModelsShowCmd makes tact models show; runF (nil: modelsShowRun)
// runs it, for tests.
func newModelsShowCmd(f *factory, runF func(context.Context, *modelsShowOptions) error) *cobra.Command {
	o := &modelsShowOptions{IO: f.IO, S: f.Settings}
	cmd := &cobra.Command{
		Use:   "show [NAME|PATH]",
		Short: "Show a model's main metadata, chat format and chat template",
		Long: "Show what tact reads from a model's GGUF metadata: name, path, size, architecture,\n" +
			"parameter count, quantization (general.file_type), context length and the chat template\n" +
			"(tokenizer.chat_template), plus the chat format tact will use for it. Other metadata keys\n" +
			"are not printed. Without NAME: the model in TACT_MODEL, else the only model in the models\n" +
			"directory. A name that is not a regular GGUF file is an error naming the file (exit 2).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			if runF != nil {
				return runF(c.Context(), o)
			}
			return modelsShowRun(c.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print one JSON object")
	return cmd
}

func modelsShowRun(ctx context.Context, o *modelsShowOptions) error {
	s := o.S
	name := s.Model
	if len(o.Args) == 1 {
		name = o.Args[0]
	}
	var info *models.Info
	err := untilCancelled(ctx, "models show", func() error {
		path, err := models.Resolve(name, s.ModelsDirectory())
		if errors.Is(err, models.ErrNoModel) {
			return badInputf("no model given and none in %s", s.ModelsDirectory())
		}
		if err != nil {
			return badInput(err)
		}
		info, err = models.Inspect(path)
		return badInput(err)
	})
	if err != nil {
		return err
	}
	f, warning := chattemplate.NewFormatter(info)
	d := modelDetails{Info: *info, ChatFormat: f.Name(), ChatFormatWarning: warning}
	out := o.IO.Out
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		return enc.Encode(d)
	}
	return writeDetails(out, d)
}

func writeDetails(w io.Writer, d modelDetails) error {
	format := d.ChatFormat
	if d.ChatFormatWarning != "" {
		format += " (" + d.ChatFormatWarning + ")"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, row := range [][2]string{
		{"name", d.Name},
		{"path", d.Path},
		{"size", fmt.Sprintf("%s (%d bytes)", fmtFileSize(d.Size), d.Size)},
		{"architecture", d.Architecture},
		{"parameters", fmt.Sprintf("%s (%d)", fmtParamCount(d.ParameterCount), d.ParameterCount)},
		{"quantization", dashIfEmpty(d.Quantization)},
		{"context length", dashIfEmpty(fmtCount(d.ContextLength))},
		{"chat format", format},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", row[0], termCell(row[1])) // read from the model file
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.ChatTemplate == "" {
		_, err := fmt.Fprintln(w, "chat template: (none)")
		return err
	}
	_, err := fmt.Fprintf(w, "chat template:\n%s\n", text.Indent(strings.TrimRight(termText(d.ChatTemplate), "\n"), "  "))
	return err
}

// modelsPullOptions is tact models pull's test seam.
type modelsPullOptions struct {
	IO   *iostreams
	S    *config.Settings
	Args []string           // the model reference
	Pull models.PullOptions // the flags; URL, Dir and Progress are set by the run
}

// newModelsPullCmd makes tact models pull; runF (nil: modelsPullRun)
// runs it, for tests.
func newModelsPullCmd(f *factory, runF func(context.Context, *modelsPullOptions) error) *cobra.Command {
	o := &modelsPullOptions{IO: f.IO, S: f.Settings}
	cmd := &cobra.Command{
		Use:   "pull NAME|URL|hf.co/REPO/FILE|REPO:QUANT",
		Short: "Download a GGUF model into the models directory",
		Long: "Download a GGUF model over HTTP(S) into the models directory as NAME.gguf and print its path.\n" +
			"The argument is a catalog NAME (tact models catalog; installed as NAME), an http(s) URL,\n" +
			"hf.co/REPO/FILE (also huggingface.co/REPO/FILE or hf://REPO/FILE), or REPO:QUANT, the one GGUF\n" +
			"file in the Hugging Face repository REPO whose name carries quantization QUANT (hf.co/REPO alone\n" +
			"means REPO:Q4_K_M). Hub forms download from $HF_ENDPOINT (default https://huggingface.co).\n" +
			"The file is checked against --sha256 when given, else against the catalog's pinned SHA-256,\n" +
			"else against the SHA-256 the server declares (X-Linked-Etag, as the Hugging Face hub sends);\n" +
			"with none of these the pull says on stderr that the file is unverified. A mismatch deletes the\n" +
			"download (exit 2).\n" +
			"The download goes to NAME.gguf.partial, with the server's ETag (else Last-Modified) kept in\n" +
			"NAME.gguf.partial.meta. Run the same command again to resume an interrupted pull: it asks for\n" +
			"the rest with Range and If-Range, so a file that changed on the server (or a server without\n" +
			"ranges, or a partial without a recorded validator) restarts from zero. No data for\n" +
			"--stall-timeout aborts the pull (exit 1) and keeps the partial; so do SIGINT (exit 130) and\n" +
			"SIGTERM (exit 143). A second pull of the same NAME while one runs fails at once (exit 1; the\n" +
			"lock is NAME.gguf.lock). An installed model is only replaced with --force. Messages never show\n" +
			"credentials in the URL (user:password@, token or signature parameters): they read [REDACTED].",
		Example: "  tact models pull qwen2.5-1.5b\n" +
			"  tact models pull Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0\n" +
			"  tact models pull hf.co/bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q8_0.gguf\n" +
			"  tact models pull https://example.com/SmolLM2-135M-Instruct-Q8_0.gguf --name smollm2 --sha256 HEX",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			if runF != nil {
				return runF(c.Context(), o)
			}
			return modelsPullRun(c.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Pull.Name, "name", "", "model `NAME` (default: the catalog name, else the file name without .gguf)")
	fl.StringVar(&o.Pull.SHA256, "sha256", "", "expected SHA-256 of the file, in `HEX` (overrides the catalog's and the server's)")
	fl.BoolVar(&o.Pull.Force, "force", false, "replace an installed model of the same name")
	fl.DurationVar(&o.Pull.StallTimeout, "stall-timeout", models.DefaultStallTimeout, "give up (keeping the partial file) when no data arrives for this long")
	return cmd
}

func modelsPullRun(ctx context.Context, o *modelsPullOptions) error {
	s := o.S
	if o.Pull.StallTimeout <= 0 {
		return badInputf("--stall-timeout %s: must be positive", o.Pull.StallTimeout)
	}
	ref, err := models.ParseRef(o.Args[0])
	if err != nil {
		return badInput(err)
	}
	endpoint := models.DefaultHubEndpoint
	if ref.Kind != models.RefURL {
		if endpoint, err = models.HubEndpoint(s.HFEndpoint); err != nil {
			return badInput(err)
		}
	}
	var src models.Source
	err = untilCancelled(ctx, "models pull", func() (err error) {
		src, err = models.ResolveRef(ctx, ref, models.HubOptions{Endpoint: endpoint, Client: o.Pull.HTTPClient, Timeout: o.Pull.StallTimeout})
		return err
	})
	if err != nil {
		return pullExit(err)
	}
	p := o.Pull
	p.URL = src.URL
	p.Dir = s.ModelsDirectory()
	if p.Name == "" {
		p.Name = src.Name
	}
	if p.SHA256 == "" {
		p.SHA256 = src.SHA256 // --sha256 overrides the catalog's pin
	}
	errOut := o.IO.ErrOut
	// stderr is the redacting writer, never the *os.File itself: the
	// streams say whether it is a terminal (as for --pull).
	if !s.Quiet && o.IO.StderrTTY {
		p.Progress = errOut
	}
	res, err := models.PullModel(ctx, p)
	if err != nil {
		return pullExit(err)
	}
	warnUnverified(errOut, s.Quiet, filepath.Base(res.Path), res)
	_, err = fmt.Fprintln(o.IO.Out, res.Path)
	return err
}

// warnUnverified says, in one line, that a pulled file could not be checked.
func warnUnverified(w io.Writer, quiet bool, name string, res models.PullResult) {
	if res.Verified != models.Unverified || quiet {
		return
	}
	fmt.Fprintf(w, "tact: warning: %s is unverified: no --sha256, no pinned checksum and the server declared none (X-Linked-Etag); its sha256 is %s\n",
		name, res.SHA256)
}

// catalogRow is `models catalog --json`: the entry, where it downloads from
// and whether it is in the models directory.
type catalogRow struct {
	models.CatalogEntry
	URL    string `json:"url"`
	Pulled bool   `json:"pulled"`
	Path   string `json:"path,omitempty"`
}

// modelsCatalogOptions is tact models catalog's test seam.
type modelsCatalogOptions struct {
	IO   *iostreams
	S    *config.Settings
	JSON bool
}

// newModelsCatalogCmd makes tact models catalog; runF (nil: modelsCatalogRun)
// runs it, for tests.
func newModelsCatalogCmd(f *factory, runF func(context.Context, *modelsCatalogOptions) error) *cobra.Command {
	o := &modelsCatalogOptions{IO: f.IO, S: f.Settings}
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List known-good small models for tool use on a CPU",
		Long: "List the models tact knows to work for tool use on a CPU, with their size, license, context\n" +
			"length, a note on tool-use quality from the model card, and whether they are pulled. Get one\n" +
			"with tact models pull NAME; the recommended default is marked *. With --json: one JSON object\n" +
			"per line, with the Hugging Face repository, file, download URL ($HF_ENDPOINT) and pinned\n" +
			"sha256 where the catalog has one.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return modelsCatalogRun(c.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "one JSON object per model and line")
	return cmd
}

func modelsCatalogRun(ctx context.Context, o *modelsCatalogOptions) error {
	s := o.S
	endpoint, err := models.HubEndpoint(s.HFEndpoint)
	if err != nil {
		return badInput(err)
	}
	dir := s.ModelsDirectory()
	var rows []catalogRow
	for _, e := range models.Catalog() {
		r := catalogRow{CatalogEntry: e, URL: e.URL(endpoint)}
		// Resolve never opens the file; a FIFO named NAME.gguf is not "pulled".
		if p, err := models.Resolve(e.Name, dir); err == nil {
			r.Pulled, r.Path = true, p
		}
		rows = append(rows, r)
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
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tLICENSE\tCTX\tPULLED\tNOTE")
	for _, r := range rows {
		name, pulled := r.Name, "no"
		if r.Default {
			name += " *"
		}
		if r.Pulled {
			pulled = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, r.SizeText(), r.License, r.ContextLength, pulled, r.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !s.Quiet {
		d := models.DefaultCatalogEntry()
		fmt.Fprintf(o.IO.ErrOut, "* recommended on a CPU; get it with: tact models pull %s (%s download)\n", d.Name, d.SizeText())
	}
	return nil
}

// untilCancelled runs fn but returns as soon as ctx ends (SIGINT or SIGTERM),
// with exit 130 (tactMain reports 143 for SIGTERM): whatever fn is blocked
// in, a models command never outlasts a signal.
func untilCancelled(ctx context.Context, what string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return &exitError{Code: 130, Err: fmt.Errorf("%s: interrupted", what)}
	}
}

// fmtParamCount formats a parameter count: 48, 12K, 248M, 1.2B.
func fmtParamCount(n uint64) string {
	switch {
	case n < 1_000:
		return strconv.FormatUint(n, 10)
	case n < 1_000_000:
		return fmtScaled(float64(n)/1e3, "K")
	case n < 1_000_000_000:
		return fmtScaled(float64(n)/1e6, "M")
	default:
		return fmtScaled(float64(n)/1e9, "B")
	}
}

func fmtScaled(v float64, unit string) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + unit
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + unit
}

// fmtFileSize formats a file size in decimal units: 512B, 1.5KB, 260MB, 4.1GB.
func fmtFileSize(n int64) string { return text.DecimalSize(n) }

func fmtCount(n uint64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatUint(n, 10)
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
