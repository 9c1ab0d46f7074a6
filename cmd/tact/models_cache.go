package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/promptcache"
)

// newModelsCacheCmd is `tact models cache list|clear`: the llama backend's
// prompt cache, the KV state of system prompts and tools kept across runs
// in $XDG_CACHE_HOME/tact/kv (docs/inference.md#prompt-cache).
func newModelsCacheCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "List or clear the prompt cache (KV state of system prompts kept across runs)",
		Long: "The llama backend keeps the KV state of the system prompt and tools of its runs in\n" +
			"$XDG_CACHE_HOME/tact/kv (default ~/.cache/tact/kv), so a later run with the same model,\n" +
			"settings and prompt loads it instead of evaluating it again. Never the query, plan or\n" +
			"tool output. --no-prompt-cache turns it off; --prompt-cache-max caps its size.",
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newModelsCacheListCmd(f, nil), newModelsCacheClearCmd(f, nil))
	return cmd
}

// modelsCacheListOptions is tact models cache list's test seam.
type modelsCacheListOptions struct {
	IO   *iostreams
	S    *config.Settings
	JSON bool
}

// newModelsCacheListCmd makes tact models cache list; runF (nil: modelsCacheListRun)
// runs it, for tests.
func newModelsCacheListCmd(f *factory, runF func(context.Context, *modelsCacheListOptions) error) *cobra.Command {
	o := &modelsCacheListOptions{IO: f.IO, S: f.Settings}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the prompt cache's files, most recently used first",
		Long: "List the prompt cache's files, most recently used first: the file, the model, the context\n" +
			"size and KV cache type, the tokens of the prompt prefix, the size and when it was last used.\n" +
			"With --json: one JSON object per line with the file's whole key. A file that is not a\n" +
			"readable entry is listed with its error (it is never loaded, and replaced when saved again).",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return modelsCacheListRun(c.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "one JSON object per file and line")
	return cmd
}

func modelsCacheListRun(ctx context.Context, o *modelsCacheListOptions) error {
	s := o.S
	dir := config.PromptCacheDir()
	var entries []promptcache.Entry
	err := untilCancelled(ctx, "models cache list", func() (err error) {
		entries, err = promptcache.List(dir)
		return err
	})
	if err != nil {
		return err
	}
	out := o.IO.Out
	if o.JSON {
		enc := json.NewEncoder(termJSONWriter{out}) // keys come from the files
		enc.SetEscapeHTML(false)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	if len(entries) == 0 {
		if !s.Quiet {
			fmt.Fprintf(o.IO.ErrOut, "the prompt cache %s is empty\n", dir)
		}
		return nil
	}
	var total int64
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tMODEL\tCTX\tKV\tTOKENS\tSIZE\tLAST USED")
	for _, e := range entries {
		total += e.Size
		name := strings.TrimSuffix(filepath.Base(e.Path), promptcache.Ext)
		if len(name) > 12 {
			name = name[:12]
		}
		if e.Key == nil {
			fmt.Fprintf(tw, "%s\t?\t?\t?\t?\t%s\t%s\n", termCell(name), fmtFileSize(e.Size), e.LastUsed.Format(time.DateTime))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", termCell(name), termCell(filepath.Base(e.Key.Model)), e.Key.CtxSize, termCell(e.Key.KVType),
			e.Tokens, fmtFileSize(e.Size), e.LastUsed.Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !s.Quiet {
		fmt.Fprintf(o.IO.ErrOut, "%d files, %s in %s\n", len(entries), fmtFileSize(total), dir)
		for _, e := range entries {
			if e.Error != "" {
				fmt.Fprintf(o.IO.ErrOut, "tact: warning: %s: %s\n", termCell(e.Path), termLine(e.Error))
			}
		}
	}
	return nil
}

// modelsCacheClearOptions is tact models cache clear's test seam.
type modelsCacheClearOptions struct {
	IO *iostreams
}

// newModelsCacheClearCmd makes tact models cache clear; runF (nil: modelsCacheClearRun)
// runs it, for tests.
func newModelsCacheClearCmd(f *factory, runF func(context.Context, *modelsCacheClearOptions) error) *cobra.Command {
	o := &modelsCacheClearOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "clear",
		Short: "Remove every file of the prompt cache",
		Long: "Remove every file of the prompt cache; the next run of each prompt evaluates it again\n" +
			"and saves it anew. Prints how many files and bytes went.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return modelsCacheClearRun(c.Context(), o)
		},
	}
	return cmd
}

func modelsCacheClearRun(ctx context.Context, o *modelsCacheClearOptions) error {
	dir := config.PromptCacheDir()
	var n int
	var size int64
	err := untilCancelled(ctx, "models cache clear", func() (err error) {
		n, size, err = promptcache.Clear(dir)
		return err
	})
	if err != nil {
		return fmt.Errorf("models cache clear: %w", err)
	}
	fmt.Fprintf(o.IO.Out, "removed %d files (%s) from %s\n", n, fmtFileSize(size), dir)
	return nil
}
