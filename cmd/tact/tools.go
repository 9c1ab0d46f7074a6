package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/exec"
)

func newToolsCmd(streams *iostreams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools with their side-effect class and argument schema",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg := exec.DefaultRegistry()
			if asJSON {
				enc := json.NewEncoder(streams.Out)
				enc.SetEscapeHTML(false)
				for _, t := range reg.List() {
					if err := enc.Encode(map[string]any{"name": t.Name(), "class": t.Class(), "description": t.Description(), "schema": t.Schema()}); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tCLASS\tDESCRIPTION")
			for _, t := range reg.List() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name(), t.Class(), t.Description())
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(streams.Out, "\nArgument schemas:")
			for _, t := range reg.List() {
				var b bytes.Buffer
				_ = json.Compact(&b, t.Schema())
				fmt.Fprintf(streams.Out, "  %s: %s\n", t.Name(), b.String())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per tool")
	return cmd
}
