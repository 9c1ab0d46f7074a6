package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tact run -f: context files in the task message (issue 26). The script
// backend's expect and expect_not check the prompt the model gets.
func TestE2EContextFiles(t *testing.T) {
	h := newHistEnv(t)
	h.extraEnv = append(h.extraEnv, "TACT_HISTORY=false")

	t.Run("5 MB on standard input is cut to the window with the marker", func(t *testing.T) {
		var diff strings.Builder
		for i := 0; diff.Len() < 5<<20; i++ {
			if i == 60000 {
				diff.WriteString("+MIDDLE-OF-THE-DIFF\n")
			}
			diff.WriteString("+a line of the change that goes on for a while\n")
		}
		s := h.write("cut.jsonl", script(t, answer("looks fine",
			"expect", []string{"Query: review this change", "The user gave this file as context: standard input\n--- begin standard input ---\n+a line", "cut (", "--- end standard input ---"},
			"expect_not", []string{"MIDDLE-OF-THE-DIFF"})))
		out, errOut, code := h.run(diff.String(), "run", "--no-plan", "--script", s, "--ctx-size", "4096", "-f", "-", "review this change")
		if code != 0 || out != "looks fine\n" {
			t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
		}
	})

	t.Run("-f - leaves the query to the arguments", func(t *testing.T) {
		_, errOut, code := h.run("some diff\n", "run", "--no-plan", "--script", h.write("none.jsonl", ""), "-f", "-")
		if code != 2 || !strings.Contains(errOut, "-f - reads standard input: give the query as arguments") {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
	})

	t.Run("a binary file is exit 2", func(t *testing.T) {
		bin := h.write("blob.bin", "GGUF\x00\x01\x02 not text")
		_, errOut, code := h.run("", "run", "--no-plan", "--script", h.write("none.jsonl", ""), "-f", bin, "what is this?")
		if code != 2 || !strings.Contains(errOut, "looks binary") {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
	})

	t.Run("a missing file is exit 2", func(t *testing.T) {
		_, errOut, code := h.run("", "run", "--no-plan", "--script", h.write("none.jsonl", ""), "-f", filepath.Join(h.dir, "nope.txt"), "q")
		if code != 2 || !strings.Contains(errOut, "nope.txt") {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
	})

	t.Run("a secret in a file is redacted in the prompt, the trace and --json", func(t *testing.T) {
		const secret = "sekritTOKEN12345"
		// Outside the workspace: the user named it.
		f := h.write("env.txt", "DEPLOY_TOKEN="+secret+"\nREGION=eu\n")
		trace := filepath.Join(h.dir, "trace.jsonl")
		// The model echoes the file, as a model may.
		s := h.write("secret.jsonl", script(t, answer("the token is "+secret,
			"expect", []string{"--- begin " + f + " ---\nDEPLOY_TOKEN=[REDACTED]\nREGION=eu\n--- end"},
			"expect_not", []string{secret})))
		out, errOut, code := h.run("", "run", "--no-plan", "--script", s, "--redact", `sekrit\w+`, "--json", "--trace", trace, "-f", f, "which region?")
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if res["final_answer"] != "the token is [REDACTED]" {
			t.Errorf("final_answer %q", res["final_answer"])
		}
		tr, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		for what, b := range map[string][]byte{"--json": []byte(out), "trace": tr, "stderr": []byte(errOut)} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret", what)
			}
		}
		if !bytes.Contains(tr, []byte(`"files":["`+f+`"]`)) {
			t.Errorf("run_start does not name the file:\n%s", tr)
		}
	})
}
