package suiterun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runrecord"
	"github.com/tactcli/tact/testsuite"
	"github.com/tactcli/tact/tools"
)

// RecordOptions say where a recorded run goes and how much of its
// workspace the fixture may hold.
type RecordOptions struct {
	Suite string // the suite directory (made when missing)
	Name  string // the new case's name
	// MaxFile and MaxTotal cap the fixture: a bigger file is left out,
	// and so are files past the total (0: 1 MiB and 16 MiB).
	MaxFile, MaxTotal int64
	// Redact, when set, redacts the fixture's files: what tact writes
	// holds no secret.
	Redact func(string) string
	// Schema is the run's --schema (compacted, checked to compile), which
	// the history does not keep: it goes to SUITE/schemas/NAME.json and
	// the case's flags.schema.
	Schema json.RawMessage
}

// Recorded is what Record wrote.
type Recorded struct {
	CaseFile, Fixture, Cassette, Plan string
	Schema                            string   // the answer schema's file ("": none)
	Files                             []string // the fixture's files, relative to it
	// Notes are lines for the user: files left out of the fixture and
	// why, things a replay will not have.
	Notes []string
	Calls int // model replies in the cassette
}

var caseName = regexp.MustCompile(`^[a-z0-9._-]+$`)

// Record turns a recorded run into a case of the suite: it appends the
// case line to SUITE/cases.jsonl and writes the fixture (the files the
// run's tools read, taken from its workspace now) to SUITE/fixtures/NAME
// and the model's replies to SUITE/cassettes/NAME.jsonl. Its starting
// assertions (the termination reason, the tool sequence) are for the
// user to edit.
func Record(ctx context.Context, book *runrecord.Book, rec history.Record, o RecordOptions) (*Recorded, error) {
	if !caseName.MatchString(o.Name) || o.Name == "." || o.Name == ".." {
		return nil, fmt.Errorf("--name %q: a case name is lower-case letters, digits, '.', '_' and '-'", o.Name)
	}
	if o.MaxFile <= 0 {
		o.MaxFile = 1 << 20
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = 16 << 20
	}
	out := &Recorded{
		CaseFile: filepath.Join(o.Suite, "cases.jsonl"),
		Fixture:  filepath.Join(o.Suite, "fixtures", o.Name),
		Cassette: filepath.Join(o.Suite, "cassettes", o.Name+".jsonl"),
	}
	if len(o.Schema) > 0 {
		out.Schema = filepath.Join(o.Suite, "schemas", o.Name+".json")
	}
	if !rec.Ended {
		return nil, fmt.Errorf("run %s never ended (%s): record a run that finished", rec.ID, rec.Reason)
	}
	// Two records into one suite at once: the lock makes the second see the
	// first's case (a duplicate name is refused, not written twice) and
	// keeps their case lines whole.
	// Every write goes through the suite's os.Root: a link in the suite
	// (cases.jsonl, fixtures/ or cassettes/ leading to /etc or the home
	// directory, as a cloned suite may hold) is never written through.
	if err := os.MkdirAll(o.Suite, 0o755); err != nil {
		return nil, fmt.Errorf("--suite %s: %w", o.Suite, err)
	}
	root, err := os.OpenRoot(o.Suite)
	if err != nil {
		return nil, fmt.Errorf("--suite %s: %w", o.Suite, err)
	}
	defer root.Close()
	sd := &suiteDir{root: root, path: o.Suite}
	unlock, err := sd.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := checkNew(sd, out, o); err != nil {
		return nil, err
	}
	// What a failed record wrote goes again, so the name can be used.
	done := false
	defer func() {
		if !done {
			for _, p := range []string{out.Fixture, out.Cassette, out.Plan, out.Schema} {
				if p != "" {
					_ = root.RemoveAll(sd.rel(p))
				}
			}
			for _, d := range []string{"fixtures", "cassettes", "plans", "schemas"} {
				_ = root.Remove(d) // only when empty: made for this case
			}
		}
	}()
	res, err := book.Result(ctx, rec)
	if err != nil {
		return nil, err
	}
	cas := &Cassette{Header: Header{Case: o.Name, Run: rec.ID, Query: rec.Query}}
	var instr []string
	var offered []string  // the tools the planner, else a free run, was offered
	var ctxFiles []string // the run's -f files
	err = book.Events(ctx, rec.ID, func(line string) error {
		var ev struct {
			Event   string   `json:"event"`
			Instr   []string `json:"project_instructions"`
			Files   []string `json:"files"`
			Tools   []string `json:"tools"`
			Allowed []string `json:"allowed_tools"`
			NoPlan  bool     `json:"no_plan"`
			Reply
			Text string `json:"reply"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil // a line the store kept as it came: not ours to judge
		}
		switch ev.Event {
		case react.EventRunStart:
			instr = ev.Instr
			if len(ev.Files) > 0 {
				ctxFiles = ev.Files
			}
		case react.EventPlanning:
			offered = ev.Tools
		case react.EventExecuteStart:
			if ev.NoPlan && offered == nil {
				offered = ev.Allowed
			}
		case react.EventModelReply:
			r := ev.Reply
			r.Text = ev.Text
			cas.Replies = append(cas.Replies, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rec.DroppedEvents > 0 {
		return nil, fmt.Errorf("run %s lost %d trace events while it ran: its model replies are incomplete, record another run", rec.ID, rec.DroppedEvents)
	}
	out.Calls = len(cas.Replies)
	if len(ctxFiles) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("the run had context files (-f %s): put copies in the suite and name them in the case's flags.files", strings.Join(ctxFiles, ", ")))
	}
	if len(instr) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("the run's system prompt held project instructions (%s): a trial's workspace has them only when the fixture does, else its prompts mismatch the cassette", strings.Join(instr, ", ")))
	}
	line := caseLine{Name: o.Name, Fixture: "fixtures/" + o.Name, Cassette: "cassettes/" + o.Name + ".jsonl"}
	if rec.Command == "exec" && rec.Plan != "" {
		out.Plan = filepath.Join(o.Suite, "plans", o.Name+".jsonl")
		line.Plan = "plans/" + o.Name + ".jsonl"
	} else {
		line.Query = rec.Query
	}
	line.Flags = recordedFlags(rec.Settings)
	if offered != nil && !slices.Contains(offered, "ask_user") && line.Flags["allow_tools"] == nil {
		// --no-ask is not among the recorded settings, but the tools
		// offered say it: without it a replay's prompts list ask_user.
		if line.Flags == nil {
			line.Flags = map[string]any{}
		}
		line.Flags["no_ask"] = true
	}
	if out.Schema != "" {
		if line.Flags == nil {
			line.Flags = map[string]any{}
		}
		line.Flags["schema"] = "schemas/" + o.Name + ".json"
	} else if jsonAnswer(res) {
		out.Notes = append(out.Notes, "the run's final answer is a JSON value, not text: it had --schema, which the history does not keep, so the case has none and its replay mismatches the cassette; record it again with the same --schema (after removing this case's line, fixture and cassette), or put the schema in the case's flags.schema")
	}
	line.Assert = startingAsserts(res)
	if n := approved(res); n != "" {
		out.Notes = append(out.Notes, fmt.Sprintf("the run's %s approved by --yes or a policy rule (the history does not say which): a trial runs unattended under the policy, so if it was --yes add \"yes\": true to the case's flags", n))
	}

	files, notes := readFiles(res, rec.Workspace, o)
	out.Notes = append(out.Notes, notes...)
	if err := sd.mkdirAll(out.Fixture); err != nil {
		return nil, err
	}
	for _, f := range files {
		to := filepath.Join(out.Fixture, f.rel)
		if err := sd.mkdirAll(filepath.Dir(to)); err != nil {
			return nil, err
		}
		if err := sd.writeNew(to, f.mode|0o600, func(b *bytes.Buffer) error { b.Write(f.data); return nil }); err != nil {
			return nil, err
		}
		out.Files = append(out.Files, f.rel)
	}
	if err := sd.writeNew(out.Cassette, 0o644, func(b *bytes.Buffer) error { _, err := cas.WriteTo(b); return err }); err != nil {
		return nil, err
	}
	if out.Schema != "" {
		if err := sd.writeNew(out.Schema, 0o644, func(b *bytes.Buffer) error { b.Write(o.Schema); b.WriteByte('\n'); return nil }); err != nil {
			return nil, err
		}
	}
	if out.Plan != "" {
		if err := sd.writeNew(out.Plan, 0o644, func(b *bytes.Buffer) error { return planJSONL(b, rec.Plan) }); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(line); err != nil {
		return nil, err
	}
	if err := sd.appendLine(out.CaseFile, b.Bytes()); err != nil {
		return nil, err
	}
	done = true
	return out, nil
}

// caseLine is a recorded case as cases.jsonl gets it.
type caseLine struct {
	Name     string                `json:"name"`
	Query    string                `json:"query,omitempty"`
	Plan     string                `json:"plan,omitempty"`
	Fixture  string                `json:"fixture"`
	Cassette string                `json:"cassette"`
	Flags    map[string]any        `json:"flags,omitempty"`
	Assert   []testsuite.Assertion `json:"assert"`
}

// recordedFlags are the run's settings that a case's flags carry, where
// they differ from the defaults.
func recordedFlags(settings string) map[string]any {
	var s struct {
		AllowTools     []string
		NoPlan         bool
		ReadOnly       bool
		MaxIterations  int
		TokenBudget    int
		StopWhen       string
		SuccessPhrases []string
		FailurePhrases []string
		Timeout        time.Duration
		NoNetwork      bool
	}
	if json.Unmarshal([]byte(settings), &s) != nil {
		return nil
	}
	f := map[string]any{}
	if len(s.AllowTools) > 0 {
		f["allow_tools"] = s.AllowTools
	}
	if s.NoPlan {
		f["no_plan"] = true
	}
	if s.ReadOnly {
		f["read_only"] = true
	}
	if s.NoNetwork {
		f["no_network"] = true
	}
	if s.MaxIterations > 0 {
		f["max_iterations"] = s.MaxIterations
	}
	if s.TokenBudget > 0 {
		f["token_budget"] = s.TokenBudget
	}
	if s.StopWhen != "" {
		f["stop_when"] = s.StopWhen
	}
	if len(s.SuccessPhrases) > 0 {
		f["success_phrases"] = s.SuccessPhrases
	}
	if len(s.FailurePhrases) > 0 {
		f["failure_phrases"] = s.FailurePhrases
	}
	if s.Timeout > 0 {
		f["timeout"] = s.Timeout.String()
	}
	if len(f) == 0 {
		return nil
	}
	return f
}

// startingAsserts are a recorded run's first assertions: how it ended,
// and the tools it called, in order.
func startingAsserts(res *react.Result) []testsuite.Assertion {
	tools, decisions, decided := []string{}, []string{}, false
	for _, st := range res.Trace.Steps {
		if st.Action.Tool != "" {
			tools = append(tools, st.Action.Tool)
		}
		decisions = append(decisions, st.Decision)
		decided = decided || st.Decision != ""
	}
	seq, _ := json.Marshal(tools)
	reason, _ := json.Marshal(string(res.TerminationReason))
	out := []testsuite.Assertion{
		{Name: "ends as " + string(res.TerminationReason), JQ: ".termination_reason == " + string(reason)},
		{Name: "calls the recorded tools in order", JQ: "[.trace.steps[].action.tool | select(. != \"\")] == " + string(seq)},
	}
	if decided { // approvals (policy, --yes) decide as they did
		d, _ := json.Marshal(decisions)
		out = append(out, testsuite.Assertion{Name: "approvals decide as recorded", JQ: "[.trace.steps[] | .decision // \"\"] == " + string(d)})
	}
	return out
}

// jsonAnswer says whether the run's final answer was a JSON value other
// than a string: the mark of a run with --schema, whose final_answer
// takes the schema's value.
func jsonAnswer(res *react.Result) bool {
	for i := len(res.Trace.Steps) - 1; i >= 0; i-- {
		st := res.Trace.Steps[i]
		if st.Action.Tool != tools.FinalAnswer {
			continue
		}
		var args struct {
			Answer json.RawMessage `json:"answer"`
		}
		if json.Unmarshal(st.Action.Args, &args) != nil {
			return false
		}
		a := bytes.TrimSpace(args.Answer)
		return len(a) > 0 && a[0] != '"' && string(a) != "null"
	}
	return false
}

// approved names the run's write and exec steps that were approved ("" for
// none), as "steps 2 (write_file), 4 (run_command) were".
func approved(res *react.Result) string {
	var steps []string
	for _, st := range res.Trace.Steps {
		if st.Decision == "allow" {
			steps = append(steps, fmt.Sprintf("%d (%s)", st.Iteration, st.Action.Tool))
		}
	}
	switch len(steps) {
	case 0:
		return ""
	case 1:
		return "step " + steps[0] + " was"
	}
	return "steps " + strings.Join(steps, ", ") + " were"
}

type fixtureFile struct {
	rel  string
	data []byte
	mode fs.FileMode
}

// readFiles reads what the run's tools named as paths to read (or to edit:
// the file must be there first) from its workspace, as they are now, within
// the size caps; the notes say what was left out and why.
func readFiles(res *react.Result, workspace string, o RecordOptions) ([]fixtureFile, []string) {
	var notes []string
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, []string{fmt.Sprintf("the run's workspace %s cannot be read (%v): the fixture is empty", workspace, err)}
	}
	defer root.Close()
	// A suite kept inside the workspace it tests is not part of a fixture:
	// each record would copy the earlier fixtures and cassettes again.
	inSuite := func(string) bool { return false }
	if ws, err := filepath.Abs(workspace); err == nil {
		if su, err := filepath.Abs(o.Suite); err == nil && o.Suite != "" {
			if r, err := filepath.Rel(ws, su); err == nil && filepath.IsLocal(r) {
				inSuite = func(p string) bool { return p == r || strings.HasPrefix(p, r+string(filepath.Separator)) }
			}
		}
	}
	seen := map[string]bool{}
	var names []string
	written := map[string]bool{}
	for _, st := range res.Trace.Steps {
		if st.Action.Tool == "" {
			continue
		}
		d, ok := tools.BuiltinDecl(st.Action.Tool)
		if !ok {
			continue
		}
		var args map[string]any
		if json.Unmarshal(st.Action.Args, &args) != nil {
			continue
		}
		for _, p := range d.Paths {
			v, _ := args[p].(string)
			if v == "" {
				v = "."
			}
			rel := filepath.Clean(v)
			if filepath.IsAbs(rel) {
				if r, err := filepath.Rel(workspace, rel); err == nil {
					rel = r
				}
			}
			if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
				continue
			}
			if d.Content != "" && d.Old == "" { // write_file: the run made it
				written[rel] = true
				continue
			}
			if !seen[rel] {
				seen[rel] = true
				names = append(names, rel)
			}
		}
	}
	var out []fixtureFile
	var total int64
	add := func(rel string) {
		if written[rel] {
			return
		}
		for _, f := range out {
			if f.rel == rel {
				return
			}
		}
		st, err := root.Stat(rel)
		if err != nil || !st.Mode().IsRegular() {
			return
		}
		if secretFile(rel) {
			notes = append(notes, fmt.Sprintf("left out %s: its name says it holds a secret (a key, credentials, .env), and a fixture is committed: copy a harmless stand-in into the fixture by hand if the case needs it", rel))
			return
		}
		switch {
		case st.Size() > o.MaxFile:
			notes = append(notes, fmt.Sprintf("left out %s: %d bytes, over the %d-byte cap a file", rel, st.Size(), o.MaxFile))
			return
		case total+st.Size() > o.MaxTotal:
			notes = append(notes, fmt.Sprintf("left out %s: the fixture would pass its %d-byte cap", rel, o.MaxTotal))
			return
		}
		data, err := root.ReadFile(rel)
		if err != nil {
			notes = append(notes, fmt.Sprintf("left out %s: %v", rel, err))
			return
		}
		if o.Redact != nil {
			if r := o.Redact(string(data)); r != string(data) {
				data = []byte(r)
				notes = append(notes, fmt.Sprintf("redacted secrets in %s: the fixture holds [REDACTED] where they were", rel))
			}
		}
		total += int64(len(data))
		out = append(out, fixtureFile{rel: rel, data: data, mode: st.Mode().Perm()})
	}
	sort.Strings(names)
	for _, rel := range names {
		st, err := root.Stat(rel)
		if err != nil {
			if !written[rel] {
				notes = append(notes, fmt.Sprintf("left out %s: not in the workspace now", rel))
			}
			continue
		}
		if !st.IsDir() {
			add(rel)
			continue
		}
		// A directory the run listed or searched: its files, within the caps.
		_ = fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") && p != rel {
				return fs.SkipDir
			}
			if d.IsDir() && inSuite(filepath.FromSlash(p)) {
				return fs.SkipDir
			}
			if total >= o.MaxTotal {
				// A run that listed a big tree (a home directory): stop
				// walking it, with one note, not one a file.
				notes = append(notes, fmt.Sprintf("left out the rest of %s: the fixture reached its %d-byte cap", rel, o.MaxTotal))
				return fs.SkipAll
			}
			if d.Type().IsRegular() {
				add(p)
			}
			return nil
		})
	}
	return out, notes
}

// secretNames and secretExts are the files a fixture leaves out by name:
// keys, credentials and dotenv files, which a run that listed a directory
// passed over and which must not end up in a suite that is committed.
var (
	secretNames = map[string]bool{".netrc": true, ".npmrc": true, ".pypirc": true, ".git-credentials": true,
		"credentials": true, "credentials.json": true, ".htpasswd": true, "id_rsa": true, "id_dsa": true,
		"id_ecdsa": true, "id_ed25519": true, ".pgpass": true, "secrets.json": true, "secrets.yaml": true, "secrets.yml": true}
	secretExts = map[string]bool{".pem": true, ".key": true, ".p12": true, ".pfx": true, ".jks": true, ".keystore": true, ".kdbx": true, ".gpg": true, ".asc": true}
	secretDirs = map[string]bool{".ssh": true, ".gnupg": true, ".aws": true, ".docker": true, ".kube": true}
)

// secretFile says whether rel's name marks it as holding a secret.
func secretFile(rel string) bool {
	base := strings.ToLower(filepath.Base(rel))
	if secretNames[base] || secretExts[filepath.Ext(base)] || base == ".env" || strings.HasPrefix(base, ".env.") ||
		strings.HasPrefix(base, "id_rsa") || strings.HasPrefix(base, "id_ed25519") || strings.HasPrefix(base, "id_ecdsa") {
		return base != ".env.example" && base != ".env.sample"
	}
	for _, dir := range strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/") {
		if secretDirs[dir] {
			return true
		}
	}
	return false
}

// planJSONL writes the recorded plan rows (a JSON array) one a line.
func planJSONL(b *bytes.Buffer, rows string) error {
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(rows), &list); err != nil {
		return fmt.Errorf("the run's plan: %w", err)
	}
	for _, r := range list {
		var c bytes.Buffer
		if err := json.Compact(&c, r); err != nil {
			return err
		}
		b.Write(c.Bytes())
		b.WriteByte('\n')
	}
	return nil
}
