package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/suiterun"
)

// testRecordOptions is tact test record's test seam.
type testRecordOptions struct {
	IO      *iostreams
	S       *config.Settings // --redact (TACT_REDACT)
	DBPath  func() (string, error)
	Run     string
	Suite   string
	Name    string
	MaxFile int64
	Schema  string // the run's --schema, which the history does not keep
}

// newTestRecordCmd makes tact test record; runF (nil: testRecord) runs
// it, for tests.
func newTestRecordCmd(f *factory, runF func(context.Context, *testRecordOptions) error) *cobra.Command {
	o := &testRecordOptions{IO: f.IO, S: f.Settings, DBPath: history.DefaultPath}
	cmd := &cobra.Command{
		Use:   "record RUN --suite DIR --name NAME",
		Short: "Make a test case of a recorded run",
		Long: "Turn RUN (an id, a unique id prefix, or \"last\": the newest run that is not a trial of\n" +
			"tact test run) into case\n" +
			"NAME of the suite DIR: its query (or its saved plan) and flags go into DIR/cases.jsonl,\n" +
			"the files its tools read (as they are now, within a size cap) into DIR/fixtures/NAME,\n" +
			"the model's replies into the cassette DIR/cassettes/NAME.jsonl, with assertions on\n" +
			"how it ended and which tools it called, to edit.",
		Example: "  tact test record last --suite suite/ --name disk-full",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Run = args[0]
			if runF != nil {
				return runF(c.Context(), o)
			}
			return testRecord(c.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Suite, "suite", "", "the suite `DIR` the case goes into (made when missing)")
	cmd.Flags().StringVar(&o.Name, "name", "", "the case's `NAME`: lower-case letters, digits, '.', '_' and '-'")
	cmd.Flags().StringVar(&o.Schema, "schema", "", "the run's --schema (inline JSON or @FILE), which the history does not keep: written to DIR/schemas/NAME.json, the case's flags.schema")
	cmd.Flags().Int64Var(&o.MaxFile, "max-file-size", 1<<20, "bytes a file may have to go into the fixture")
	cmd.Flags().StringArrayVar(&o.S.Redact, "redact", o.S.Redact, "regexp whose matches are replaced by [REDACTED] in the fixture's files (repeatable)")
	return cmd
}

func testRecord(ctx context.Context, o *testRecordOptions) error {
	if o.Suite == "" || o.Name == "" {
		return badInputf("tact test record needs --suite DIR and --name NAME")
	}
	if o.MaxFile < 1 {
		return badInputf("--max-file-size %d: want 1 or more bytes", o.MaxFile)
	}
	// The fixture's files are written by tact: secrets in them (the
	// environment's, --redact's) are redacted as in every file tact writes.
	red, err := redact.NewRedactor(os.Environ(), o.S.Redact)
	if err != nil {
		return badInputf("--redact: %v", err)
	}
	var answer json.RawMessage
	if o.Schema != "" {
		if answer, err = schema.ReadAnswer(o.Schema); err != nil {
			return badInputf("--schema: %v", err)
		}
	}
	book, rec, err := suiterun.OpenRun(ctx, o.DBPath, o.Run)
	if err != nil {
		return err
	}
	defer book.Close()
	out, err := suiterun.Record(ctx, book, rec, suiterun.RecordOptions{Suite: o.Suite, Name: o.Name, MaxFile: o.MaxFile, Redact: red.Redact, Schema: answer})
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(o.IO.ErrOut, "tact: recorded run %s as case %s in %s: %d fixture files, %d model replies in %s\n",
		rec.ID, o.Name, out.CaseFile, len(out.Files), out.Calls, out.Cassette)
	for _, n := range out.Notes {
		fmt.Fprintf(o.IO.ErrOut, "tact: note: %s\n", n)
	}
	return nil
}
