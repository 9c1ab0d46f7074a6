package main

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/react"
)

// The README is the scripting contract: every environment variable, every
// flag of run/exec and every exit code must be documented there.
func TestReadmeDocumentsContract(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	ty := reflect.TypeOf(config.Settings{})
	for i := 0; i < ty.NumField(); i++ {
		name := ty.Field(i).Tag.Get("envconfig")
		if !strings.Contains(readme, "| `"+name+"` |") {
			t.Errorf("README lacks environment variable %s", name)
		}
	}
	s := &config.Settings{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(fs, s, modeRun)
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(readme, "`--"+f.Name) {
			t.Errorf("README lacks flag --%s", f.Name)
		}
	})
	for _, r := range []react.Reason{react.ReasonSuccess, react.ReasonError, react.ReasonFailure, react.ReasonMaxIterations,
		react.ReasonStalled, react.ReasonTokenBudget, react.ReasonTimeout, react.ReasonCustom, react.ReasonCancelled} {
		row := "| " + strconv.Itoa(r.ExitCode()) + " | `" + string(r) + "` |"
		if !strings.Contains(readme, row) {
			t.Errorf("README exit code table lacks %q", row)
		}
	}
}
