package hooks

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
)

// encode writes c back as a hooks file, one group per hook.
func encode(c *Config) []byte {
	events := map[string]any{}
	for ev, hs := range c.hooks {
		groups := []any{}
		for _, h := range hs {
			groups = append(groups, map[string]any{
				"matcher": h.Matcher,
				"hooks":   []any{map[string]any{"type": "command", "command": h.Command, "timeout": h.Timeout.Seconds()}},
			})
		}
		events[string(ev)] = groups
	}
	b, err := json.Marshal(map[string]any{"hooks": events})
	if err != nil {
		panic(err)
	}
	return b
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"hooks":{}}`, `[]`, `{"hooks":{"Stop":[]}} x`,
		`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"x","timeout":0.5}]}]}}`,
		`{"hooks":{"PostToolUse":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"a"},{"type":"command","command":"b","timeout":3600}]}]}}`,
		`{"hooks":{"RunStart":[{"matcher":"(","hooks":[{"type":"command","command":"c"}]}],"Stop":[{"hooks":[]}]}}`,
		`{"hooks":{"PreToolUse":[{"matcher":"a)|(b","hooks":[]}]}}`,
		`{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"c","timeout":1e400}]}]}}`,
		`{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"c","command":"d"}]}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line naming the file", err)
			}
			return
		}
		again, err := Parse("g.json", encode(c))
		if err != nil {
			t.Fatalf("the parsed file, written back, does not parse: %v", err)
		}
		for _, ev := range Events {
			if len(again.hooks[ev]) != len(c.hooks[ev]) {
				t.Fatalf("%s: %d hooks, then %d", ev, len(c.hooks[ev]), len(again.hooks[ev]))
			}
			for _, h := range c.hooks[ev] {
				if h.Timeout < 1e6 || h.Timeout > MaxTimeout || strings.TrimSpace(h.Command) == "" {
					t.Fatalf("hook %+v", h)
				}
			}
		}
		for _, tool := range []string{"run_command", "list_files", "srv.tool", ""} {
			_ = c.Hooks(PreToolUse, tool)
		}
	})
}

func FuzzReply(f *testing.F) {
	for _, s := range []string{
		``, `plain`, `{`, `{}`, `null`, `{"decision":"block","reason":"r"}`, `{"decision":"approve"}`,
		`{"decision":1}`, `{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"x"}}`,
		`{"hookSpecificOutput":[]}`, `{"additionalContext":"c","hookSpecificOutput":{"additionalContext":"d"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ev := range Events {
			rp, err := parseReply(ev, data)
			if err != nil {
				continue
			}
			switch {
			case rp.decision == DecisionApprove && ev != PreToolUse:
				t.Fatalf("%s approved", ev)
			case rp.decision != "" && rp.decision != DecisionBlock && rp.decision != DecisionApprove:
				t.Fatalf("decision %q", rp.decision)
			}
		}
	})
}

// FuzzToolInput: the alias fields never break the arguments' JSON nor
// drop one of their fields; the fields tact computes (the resolved path,
// file_path, lexical_path, cwd) hold what they say.
func FuzzToolInput(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"a"}`, `{"command":"ls","working_dir":"/x"}`, ` {"path":"a","path":1} `, `[1]`, `{"file_path":"x","path":"y"}`,
		`{"path":"../../etc/passwd","lexical_path":"docs/x"}`, `{"path":"a/./b//c/.."}`} {
		f.Add("read_file", s)
		f.Add("run_command", s)
		f.Add("write_file", s)
	}
	f.Fuzz(func(t *testing.T, tool, args string) {
		out := withAliases(tool, json.RawMessage(args), "/ws")
		var in map[string]json.RawMessage
		if json.Unmarshal([]byte(args), &in) != nil {
			if string(out) != args {
				t.Fatalf("%q changed to %q", args, out)
			}
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q became %q: %v", args, out, err)
		}
		computed := map[string]bool{}
		var p string
		d, _ := tools.BuiltinDecl(tool)
		if d.IsPath("path") && json.Unmarshal(in["path"], &p) == nil && p != "" {
			computed["path"], computed["lexical_path"] = true, true
			computed["file_path"] = d.FilePath
			var lp, rp string
			if json.Unmarshal(got["lexical_path"], &lp) != nil || lp != p || json.Unmarshal(got["path"], &rp) != nil ||
				strings.Contains("/"+rp+"/", "/../") && !filepath.IsAbs(rp) {
				t.Fatalf("%q: path %s, lexical_path %s", args, got["path"], got["lexical_path"])
			}
		}
		if d.Command != "" {
			computed["cwd"] = true
			var cwd string
			if json.Unmarshal(got["cwd"], &cwd) != nil || !filepath.IsAbs(cwd) {
				t.Fatalf("%q: cwd %s", args, got["cwd"])
			}
		}
		for k, v := range in {
			if !computed[k] && string(got[k]) != string(v) {
				t.Fatalf("%q: field %q is %s, was %s", args, k, got[k], v)
			}
		}
	})
}

// FuzzCutReply: a reply cut at any length is never taken as an opinion
// (allow or approve) of a PreToolUse, PostToolUse or Stop hook; whole
// replies decide as parseReply does.
func FuzzCutReply(f *testing.F) {
	for _, s := range []string{`{"decision":"block","reason":"r"}`, `{"decision":"approve"}`, "   \n\t", `plain`, `{"hookSpecificOutput":{"permissionDecision":"deny"}}`} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		n := min(int(at), len(data))
		for _, ev := range Events {
			rp, err := judgeReply(ev, data[:n], true)
			if ev != RunStart && err == nil {
				t.Fatalf("%s: a reply cut at %d of %d bytes was taken as %+v", ev, n, len(data), rp)
			}
			if ev == RunStart && err == nil && rp.decision != "" {
				t.Fatalf("RunStart decided %q", rp.decision)
			}
			whole, err1 := judgeReply(ev, data, false)
			want, err2 := parseReply(ev, data)
			if (err1 == nil) != (err2 == nil) || whole != want {
				t.Fatalf("%s: whole reply judged %+v %v, parsed %+v %v", ev, whole, err1, want, err2)
			}
		}
	})
}
