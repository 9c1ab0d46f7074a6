package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/models"
)

// newModelsCmd is `tact models`: list, show and pull GGUF models in the
// models directory.
func newModelsCmd(s *config.Settings) *cobra.Command {
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
	cmd.AddCommand(newModelsListCmd(s), newModelsShowCmd(s), newModelsPullCmd(s), newModelsCatalogCmd(s), newModelsCacheCmd(s))
	return cmd
}

func newModelsListCmd(s *config.Settings) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the models in the models directory",
		Long: "List the models in the models directory as a table, or with --json as one JSON object per line.\n" +
			"A *.gguf entry that is not a usable model (not a GGUF file, or not a regular file: a FIFO,\n" +
			"device, socket or directory, which is never opened) is listed too, with ? columns and its\n" +
			"error as a warning on stderr (with --json, in its \"error\" field).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := s.ModelsDirectory()
			var infos []models.Info
			err := untilCancelled(cmd.Context(), "models list", func() (err error) {
				infos, err = models.List(dir)
				return err
			})
			if err != nil {
				return err
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if asJSON {
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
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per model and line")
	return cmd
}

// modelDetails is `models show --json`: the model's metadata plus the chat
// format tact will use for it.
type modelDetails struct {
	models.Info
	ChatFormat        string `json:"chat_format"`
	ChatFormatWarning string `json:"chat_format_warning,omitempty"`
}

func newModelsShowCmd(s *config.Settings) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [NAME|PATH]",
		Short: "Show a model's main metadata, chat format and chat template",
		Long: "Show what tact reads from a model's GGUF metadata: name, path, size, architecture,\n" +
			"parameter count, quantization (general.file_type), context length and the chat template\n" +
			"(tokenizer.chat_template), plus the chat format tact will use for it. Other metadata keys\n" +
			"are not printed. Without NAME: the model in TACT_MODEL, else the only model in the models\n" +
			"directory. A name that is not a regular GGUF file is an error naming the file (exit 2).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := s.Model
			if len(args) == 1 {
				name = args[0]
			}
			var info *models.Info
			err := untilCancelled(cmd.Context(), "models show", func() error {
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
			f, warning := models.NewFormatter(info)
			d := modelDetails{Info: *info, ChatFormat: f.Name(), ChatFormatWarning: warning}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				return enc.Encode(d)
			}
			return writeDetails(out, d)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
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

func newModelsPullCmd(s *config.Settings) *cobra.Command {
	var opts models.PullOptions
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.StallTimeout <= 0 {
				return badInputf("--stall-timeout %s: must be positive", opts.StallTimeout)
			}
			ref, err := models.ParseRef(args[0])
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
			err = untilCancelled(cmd.Context(), "models pull", func() (err error) {
				src, err = models.ResolveRef(cmd.Context(), ref, models.HubOptions{Endpoint: endpoint, Client: opts.HTTPClient, Timeout: opts.StallTimeout})
				return err
			})
			if err != nil {
				return pullExit(err)
			}
			o := opts
			o.URL = src.URL
			o.Dir = s.ModelsDirectory()
			if o.Name == "" {
				o.Name = src.Name
			}
			if o.SHA256 == "" {
				o.SHA256 = src.SHA256 // --sha256 overrides the catalog's pin
			}
			errOut := cmd.ErrOrStderr()
			if f, ok := errOut.(*os.File); ok && !s.Quiet && term.IsTerminal(int(f.Fd())) {
				o.Progress = errOut
			}
			res, err := models.PullModel(cmd.Context(), o)
			if err != nil {
				return pullExit(err)
			}
			warnUnverified(errOut, s.Quiet, filepath.Base(res.Path), res)
			_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Path)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Name, "name", "", "model `NAME` (default: the catalog name, else the file name without .gguf)")
	f.StringVar(&opts.SHA256, "sha256", "", "expected SHA-256 of the file, in `HEX` (overrides the catalog's and the server's)")
	f.BoolVar(&opts.Force, "force", false, "replace an installed model of the same name")
	f.DurationVar(&opts.StallTimeout, "stall-timeout", models.DefaultStallTimeout, "give up (keeping the partial file) when no data arrives for this long")
	return cmd
}

// pullExit maps a pull's error to its exit code: bad input (argument,
// checksum, not a model, already installed) is 2, an interruption 130 (143
// for SIGTERM, set by tactMain), anything else 1.
func pullExit(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return &exitError{Code: 130, Err: err} // tactMain reports 143 for SIGTERM
	case errors.Is(err, models.ErrInvalid), errors.Is(err, models.ErrExists),
		errors.Is(err, models.ErrChecksum), errors.Is(err, models.ErrBadModel):
		return badInput(err)
	}
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

func newModelsCatalogCmd(s *config.Settings) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List known-good small models for tool use on a CPU",
		Long: "List the models tact knows to work for tool use on a CPU, with their size, license, context\n" +
			"length, a note on tool-use quality from the model card, and whether they are pulled. Get one\n" +
			"with tact models pull NAME; the recommended default is marked *. With --json: one JSON object\n" +
			"per line, with the Hugging Face repository, file, download URL ($HF_ENDPOINT) and pinned\n" +
			"sha256 where the catalog has one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			out := cmd.OutOrStdout()
			if asJSON {
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
				fmt.Fprintf(cmd.ErrOrStderr(), "* recommended on a CPU; get it with: tact models pull %s (%s download)\n", d.Name, d.SizeText())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per model and line")
	return cmd
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
