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
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/exec"
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

// startMCP starts the configured servers (only, when not nil, limits them)
// and returns base plus their tools. The Manager is nil without servers;
// Close on nil is a no-op.
func startMCP(ctx context.Context, cfg *mcp.Config, only []string, base *exec.Registry) (*mcp.Manager, *exec.Registry) {
	if cfg == nil || len(cfg.Servers) == 0 {
		return nil, base
	}
	m := mcp.Start(ctx, cfg, only, mcp.Options{ClientVersion: buildinfo.Version, Log: slog.Default()})
	return m, m.Registry(base)
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

func newMCPCmd(s *config.Settings, streams *iostreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP servers: tools from Model Context Protocol servers (see docs/mcp.md)",
		Args:  cobra.NoArgs,
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Start each configured MCP server and show its state and tool count",
		Long: "Start each server of the MCP servers file ($XDG_CONFIG_HOME/tact/mcp.json, --mcp-config\n" +
			"or TACT_MCP_CONFIG) as a run would, and print its name, transport, state (ready,\n" +
			"failed, disabled) and number of tools; --json prints one object per server.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadMCPConfig(s)
			if err != nil {
				return err
			}
			redactStderr(streams, mcpRedactor(cfg))
			m := mcp.Start(c.Context(), cfg, nil, mcp.Options{ClientVersion: buildinfo.Version, Log: slog.Default()})
			defer m.Close()
			red := mcpRedactor(cfg)
			var buf bytes.Buffer
			if asJSON {
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
			_, err = streams.Out.Write(termJSON(red.RedactJSON(buf.Bytes())))
			return err
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "one JSON object per server: name, transport, state, tools, error")
	list.Flags().StringVar(&s.MCPConfig, "mcp-config", s.MCPConfig, "MCP servers `FILE` (default $XDG_CONFIG_HOME/tact/mcp.json)")
	cmd.AddCommand(list)
	return cmd
}

// mcpRedactor redacts the MCP config's secrets and the environment's, for
// commands other than run, plan and exec (whose redactor covers them).
func mcpRedactor(cfg *mcp.Config) *exec.Redactor {
	red, err := exec.NewRedactor(append(os.Environ(), cfg.SecretEnviron()...), nil)
	if err != nil {
		return nil // only patterns can fail, and there are none
	}
	return red
}
