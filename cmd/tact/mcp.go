package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/buildinfo"
	"github.com/tactcli/tact/mcp"
)

// loadMCPConfig reads the MCP servers file (--mcp-config, TACT_MCP_CONFIG,
// or the default, which may be missing); a bad one is bad input.
func loadMCPConfig(s *config.Settings) (*mcp.Config, error) {
	path, explicit := s.MCPConfigPath()
	cfg, err := mcp.Load(path, explicit, os.LookupEnv)
	if err != nil {
		return nil, badInput(err)
	}
	return cfg, nil
}

// planServers names the servers whose tools (SERVER.TOOL) a plan's rows
// use, so `tact exec` starts only those. Rows that do not parse are left
// to the plan parser, which reports them with FILE:LINE.
func planServers(data []byte) []string {
	out := []string{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), len(data)+1)
	for sc.Scan() {
		var row struct {
			Tool string `json:"tool"`
		}
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &row) != nil {
			continue
		}
		if server, _, ok := strings.Cut(row.Tool, "."); ok && !seen[server] {
			seen[server] = true
			out = append(out, server)
		}
	}
	return out
}

// mcpListOptions is tact mcp list's test seam: everything it needs, parsed.
type mcpListOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	JSON    bool
}

// newMCPCmd makes tact mcp; runF (nil: mcpListRun) runs its list, for tests.
func newMCPCmd(f *factory, runF func(context.Context, *mcpListOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP: tools from Model Context Protocol servers, and tact as one (see docs/mcp.md)",
		Args:  cobra.NoArgs,
	}
	o := &mcpListOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	list := &cobra.Command{
		Use:   "list",
		Short: "Start each configured MCP server and show its state and tool count",
		Long: "Start each server of the MCP servers file ($XDG_CONFIG_HOME/tact/mcp.json, --mcp-config\n" +
			"or TACT_MCP_CONFIG) as a run would, and print its name, transport, state (ready,\n" +
			"failed, disabled) and number of tools; --json prints one object per server.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return mcpListRun(c.Context(), o)
		},
	}
	list.Flags().BoolVar(&o.JSON, "json", false, "one JSON object per server: name, transport, state, tools, error")
	list.Flags().StringVar(&f.Settings.MCPConfig, "mcp-config", f.Settings.MCPConfig, "MCP servers `FILE` (default $XDG_CONFIG_HOME/tact/mcp.json)")
	cmd.AddCommand(list, newMCPServeCmd(f, nil))
	return cmd
}

func mcpListRun(ctx context.Context, o *mcpListOptions) error {
	modelFree(o.S)
	// The runtime checks the settings and the servers file and knows the
	// secrets; it starts no server (the runtime does not report their
	// states), the listing starts them itself below.
	rt, err := o.Runtime(ctx, agent.Options{Mode: "mcp", MCPServers: []string{}})
	if err != nil {
		return err
	}
	cfg, err := loadMCPConfig(o.S)
	if err != nil {
		return err
	}
	m := mcp.Start(ctx, cfg, nil, mcp.Options{ClientVersion: buildinfo.Version, Log: slog.Default()})
	defer m.Close()
	var buf bytes.Buffer
	if o.JSON {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for _, st := range m.Status() {
			if err := enc.Encode(st); err != nil {
				return err
			}
		}
	} else if len(cfg.Servers) == 0 {
		fmt.Fprintf(&buf, "no MCP servers configured (%s)\n", termCell(cfg.Path))
	} else {
		tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tTOOLS\tERROR")
		// A failed server's error carries its last stderr line.
		for _, st := range m.Status() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", termCell(st.Name), st.Transport, st.State, st.Tools, termCell(st.Error))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err = o.IO.Out.Write(termJSON(rt.Redactor.RedactJSON(buf.Bytes())))
	return err
}
