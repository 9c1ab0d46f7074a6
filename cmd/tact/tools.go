package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/exec"
	"github.com/tactcli/tact/mcp"
)

func newToolsCmd(s *config.Settings, streams *iostreams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools with their side-effect class and argument schema",
		Long: "List the built-in tools and the tools of the configured MCP servers (named\n" +
			"SERVER.TOOL; see docs/mcp.md) with their side-effect class and argument schema.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadMCPConfig(s)
			if err != nil {
				return err
			}
			red := mcpRedactor(cfg)
			redactStderr(streams, red)
			servers, reg := startMCP(cmd.Context(), cfg, nil, exec.DefaultRegistry())
			defer servers.Close()
			serverOf := func(t exec.Tool) string {
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
			if asJSON {
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
				_, err := streams.Out.Write(termJSON(red.RedactJSON(out.Bytes())))
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
			_, err = streams.Out.Write([]byte(red.Redact(out.String())))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per tool (MCP tools add \"server\")")
	cmd.Flags().StringVar(&s.MCPConfig, "mcp-config", s.MCPConfig, "MCP servers `FILE` (default $XDG_CONFIG_HOME/tact/mcp.json)")
	return cmd
}
