package main

import (
	"context"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// Each command parses its arguments and flags into its options (the test
// seam: runF sees them, nothing runs) and binds its flags to the shared
// settings.
func TestCommandOptions(t *testing.T) {
	factoryEnv(t)
	for _, tc := range []struct {
		args  []string
		check func(t *testing.T, f *factory, got any)
	}{
		{[]string{"run", "--json", "what", "now"}, func(t *testing.T, f *factory, got any) {
			o := got.(*runOptions)
			if !slices.Equal(o.Args, []string{"what", "now"}) || !o.S.JSON || o.S != f.Settings || o.IO != f.IO {
				t.Fatalf("%+v", o)
			}
		}},
		{[]string{"plan", "--allow-tools", "read_file", "q"}, func(t *testing.T, f *factory, got any) {
			o := got.(*planOptions)
			if !slices.Equal(o.Args, []string{"q"}) || !slices.Equal(o.S.AllowTools, []string{"read_file"}) {
				t.Fatalf("%+v", o)
			}
		}},
		{[]string{"exec", "--dry-run", "--query", "why", "p.jsonl"}, func(t *testing.T, f *factory, got any) {
			o := got.(*execOptions)
			if !slices.Equal(o.Args, []string{"p.jsonl"}) || !o.S.DryRun || o.S.Query != "why" {
				t.Fatalf("%+v", o)
			}
		}},
		{[]string{"batch", "--ordered", "--parallel", "3", "-"}, func(t *testing.T, f *factory, got any) {
			o := got.(*batchOptions)
			if !slices.Equal(o.Args, []string{"-"}) || !o.Ordered || o.S.Parallel != 3 {
				t.Fatalf("%+v", o)
			}
		}},
		{[]string{"chat", "--no-plan", "--yes", "--allow-tools", "read_file,list_files", "--trace", "t.jsonl"}, func(t *testing.T, f *factory, got any) {
			o := got.(*chatOptions)
			if s := o.S; s != f.Settings || o.IO != f.IO || !s.NoPlan || !s.Yes || s.Trace != "t.jsonl" || !slices.Equal(s.AllowTools, []string{"read_file", "list_files"}) {
				t.Fatalf("%+v", o.S)
			}
		}},
		{[]string{"serve", "--addr", "127.0.0.1:9", "--token-env", "T_TOKEN", "--queue", "5", "--max-body", "64KiB", "--shutdown-grace", "3s", "--parallel", "2"}, func(t *testing.T, f *factory, got any) {
			o := got.(*serveOptions)
			if s := o.S; s != f.Settings || s.Addr != "127.0.0.1:9" || s.TokenEnv != "T_TOKEN" || s.Queue != 5 || s.MaxBody != 64<<10 || s.ShutdownGrace.String() != "3s" || s.Parallel != 2 {
				t.Fatalf("%+v", o.S)
			}
		}},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			f, opens, _, _ := countingFactory("")
			var got any
			var cmd *cobra.Command
			switch tc.args[0] {
			case "run":
				cmd = newRunCmd(f, func(_ context.Context, o *runOptions) error { got = o; return nil })
			case "plan":
				cmd = newPlanCmd(f, func(_ context.Context, o *planOptions) error { got = o; return nil })
			case "exec":
				cmd = newExecCmd(f, func(_ context.Context, o *execOptions) error { got = o; return nil })
			case "batch":
				cmd = newBatchCmd(f, func(_ context.Context, o *batchOptions) error { got = o; return nil })
			case "chat":
				cmd = newChatCmd(f, func(_ context.Context, o *chatOptions) error { got = o; return nil })
			case "serve":
				cmd = newServeCmd(f, func(_ context.Context, o *serveOptions) error { got = o; return nil })
			}
			cmd.SetArgs(tc.args[1:])
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			tc.check(t, f, got)
			if *opens != 0 {
				t.Fatalf("%d opens", *opens)
			}
		})
	}
}
