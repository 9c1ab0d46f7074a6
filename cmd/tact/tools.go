package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/mcp"
	"github.com/tactcli/tact/tools"
)

// toolsOptions is tact tools' test seam: everything it needs, parsed.
type toolsOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	JSON    bool
}

// newToolsCmd makes tact tools; runF (nil: toolsRun) runs it, for tests.
func newToolsCmd(f *factory, runF func(context.Context, *toolsOptions) error) *cobra.Command {
	o := &toolsOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools with their side-effect class and argument schema",
		Long: "List the built-in tools and the tools of the configured MCP servers (named\n" +
			"SERVER.TOOL; see docs/mcp.md) with their side-effect class and argument schema.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return toolsRun(c.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "one JSON object per tool (MCP tools add \"server\")")
	cmd.Flags().StringVar(&f.Settings.MCPConfig, "mcp-config", f.Settings.MCPConfig, "MCP servers `FILE` (default $XDG_CONFIG_HOME/tact/mcp.json)")
	return cmd
}

// modelFree makes s open a runtime without a model (tools, mcp list): they
// list what a run would have, so what shapes the tools and their redaction
// (the MCP servers file, --env, --redact, the openai key) applies as in a
// run. They run no job: no model to load or pull, no trace to write, and
// the job-only settings the runtime checks are left at their defaults, so
// a bad one does not stop a listing (docs/cli.md: tact tools always works).
func modelFree(s *config.Settings) {
	d := config.Defaults()
	s.Backend, s.Pull, s.Trace = llm.BackendNone, false, ""
	s.Workspace, s.Policy, s.Sandbox, s.AllowTools, s.StopWhen, s.Threads = d.Workspace, d.Policy, d.Sandbox, d.AllowTools, d.StopWhen, d.Threads
}

func toolsRun(ctx context.Context, o *toolsOptions) error {
	modelFree(o.S)
	// The registry, MCP servers and redactor a run would have.
	rt, err := o.Runtime(ctx, agent.Options{Mode: "tools"})
	if err != nil {
		return err
	}
	reg, red := rt.Registry, rt.Redactor
	serverOf := func(t tools.Tool) string {
		if mt, ok := t.(*mcp.Tool); ok {
			return mt.Server()
		}
		return ""
	}
	hasMCP := false
	for _, t := range reg.List() {
		hasMCP = hasMCP || serverOf(t) != ""
	}
	var out bytes.Buffer
	if o.JSON {
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		for _, t := range reg.List() {
			obj := map[string]any{"name": t.Name(), "class": t.Class(), "description": t.Description(), "schema": t.Schema()}
			if srv := serverOf(t); srv != "" {
				obj["server"] = srv
			}
			if err := enc.Encode(obj); err != nil {
				return err
			}
		}
		_, err := o.IO.Out.Write(termJSON(red.RedactJSON(out.Bytes())))
		return err
	}
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	// The SERVER column only when MCP servers add tools, so the
	// built-in listing stays as it was.
	if hasMCP {
		fmt.Fprintln(tw, "TOOL\tCLASS\tSERVER\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "TOOL\tCLASS\tDESCRIPTION")
	}
	// Names, servers and descriptions may come from MCP servers:
	// every cell is sanitized (termsafe.go).
	for _, t := range reg.List() {
		name, desc := termCell(t.Name()), termCell(t.Description())
		if hasMCP {
			srv := serverOf(t)
			if srv == "" {
				srv = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, t.Class(), termCell(srv), desc)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, t.Class(), desc)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(&out, "\nArgument schemas:")
	for _, t := range reg.List() {
		var b bytes.Buffer
		_ = json.Compact(&b, t.Schema())
		fmt.Fprintf(&out, "  %s: %s\n", termCell(t.Name()), termJSON(b.Bytes()))
	}
	_, err = o.IO.Out.Write([]byte(red.Redact(out.String())))
	return err
}
