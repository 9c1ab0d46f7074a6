package devsetup

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tactcli/tact/"

// The floors, bottom up. A package imports packages on its own floor or
// below, never above; two top-level folders never import each other.
const (
	ground = iota
	model
	toolFloor
	runFloor
	engineFloor
	wiring
	frontEnds
)

var floorNames = []string{"ground", "model", "tools", "run", "engine", "wiring", "front ends"}

type place struct {
	floor int
	what  string // one line for docs/development.md's diagram
}

// floors places every package of the module. A new package fails
// TestLayout until it is placed here; docs/development.md's diagram is
// drawn from this table (TestLayoutDoc).
var floors = map[string]place{
	"cmd/tact":           {frontEnds, "the CLI: one file a command; commands parse, wire and print"},
	"cmd/tact/render":    {frontEnds, "draws a run on a terminal"},
	"suiterun":           {frontEnds, "tact test: records runs as cases, replays and runs suites"},
	"server":             {frontEnds, "tact serve: HTTP, queue, auth"},
	"server/stepapi":     {frontEnds, "the step service (one ReAct step over HTTP)"},
	"server/prose":       {frontEnds, "prose answers for the step API"},
	"mcpserve":           {frontEnds, "tact mcp serve: the sandboxed tools and runs over MCP"},
	"scripts/bench":      {frontEnds, "make bench"},
	"scripts/synthmodel": {frontEnds, "writes random-weight GGUF models for tests"},

	"backends": {wiring, "opens llama and openai for the engine (cmd/tact and the bench import it)"},

	"agent":           {engineFloor, "the runtime opened once from the settings; jobs run on it; typed errors"},
	"agent/agenttest": {engineFloor, "test helpers for the engine"},

	"react":     {runFloor, "the executor: loop, perform's stages, plan steps, replans, window, checkpoints"},
	"planner":   {runFloor, "plan format, parsing and the planner"},
	"runplan":   {runFloor, "a recorded run made into a saved plan"},
	"runrecord": {runFloor, "the run record: what a job leaves in the history, read back for log, resume, plan --from"},
	"mcp":       {runFloor, "MCP servers' tools as SERVER.TOOL"},
	"telemetry": {runFloor, "OpenTelemetry: a run's events as GenAI spans, OTLP export, traceparent"},

	"tools":          {toolFloor, "the tools (each declares its paths, command and side effects), registry, Env"},
	"policy":         {toolFloor, "rules, the approval gate, prompters, --approve-cmd's approver"},
	"policy/cmdline": {toolFloor, "the command analyser"},
	"hooks":          {toolFloor, "the user's hooks file and the hook runner"},
	"sandbox":        {toolFloor, "run_command's helper, Landlock, the process-group supervisor"},

	"llm":                 {model, "the backend interface, optional capabilities, script and none, llm.Redacting"},
	"llm/chattemplate":    {model, "chat templates: a model's jinja matched to a Go template (pure Go)"},
	"llm/llamacpp":        {model, "the llama.cpp backend: scheduler, slots, sampling, prompt cache, providers"},
	"llm/llamacpp/memfit": {model, "what fits in memory"},
	"llm/llamalib":        {model, "llama.cpp's C API from the runtime's shared libraries (purego)"},
	"llm/llamaruntime":    {model, "the pinned llama.cpp runtime: install, build, locate"},
	"llm/openai":          {model, "OpenAI-compatible servers"},

	"config":                {ground, "settings; the one owner of TACT_* variables"},
	"grammar":               {ground, "JSON Schema to GBNF"},
	"grammar/gbnf":          {ground, "a GBNF reader"},
	"history":               {ground, "the run store (SQLite); runrecord knows what its records hold"},
	"models":                {ground, "GGUF files: inspect, catalog, pull"},
	"prompt":                {ground, "prompt templates"},
	"redact":                {ground, "secrets out of every text"},
	"redact/redacttest":     {ground, "test helpers"},
	"schema":                {ground, "JSON Schema: compile, simplify, outline"},
	"schema/schematest":     {ground, "test helpers"},
	"testsuite":             {ground, "tact test's suites: the case format, checks on a run, reports (JUnit)"},
	"internal/atomicfile":   {ground, "atomic writes"},
	"internal/buildinfo":    {ground, "version"},
	"internal/cpulock":      {ground, "the per-user CPU lock"},
	"internal/devsetup":     {ground, "the house's own tests (this table)"},
	"internal/filekind":     {ground, "file kinds"},
	"internal/instructions": {ground, "AGENTS.md and project instructions"},
	"internal/jqx":          {ground, "jq with bounds"},
	"internal/jqx/jqxtest":  {ground, "test helpers"},
	"internal/mcptest":      {ground, "an MCP test server"},
	"internal/otlptest":     {ground, "a loopback OTLP receiver for tests"},
	"internal/outfile":      {ground, "-o files"},
	"internal/procsafe":     {ground, "child process hygiene"},
	"internal/promptcache":  {ground, "the prompt cache's files"},
	"internal/synth":        {ground, "random-weight models"},
	"internal/testlock":     {ground, "one llama-heavy test at a time"},
	"internal/testwait":     {ground, "the tests' one poll: wait on a state, never a fixed time"},
	"internal/text":         {ground, "text helpers"},
	"internal/threads":      {ground, "thread counts"},
	"internal/wspath":       {ground, "workspace paths"},
}

// imports lists each package's direct imports within the module, for the
// default build and the cgo provider's (-tags cgollama); go list reads, it
// does not compile.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	deps := map[string][]string{}
	for _, tags := range []string{"", "cgollama"} {
		out, err := exec.Command("go", "list", "-e", "-tags", tags, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../../...").Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || !strings.HasPrefix(f[0], module) {
				continue
			}
			pkg := strings.TrimPrefix(f[0], module)
			if _, ok := deps[pkg]; !ok {
				deps[pkg] = nil
			}
			for _, d := range f[1:] {
				if strings.HasPrefix(d, module) {
					deps[pkg] = append(deps[pkg], strings.TrimPrefix(d, module))
				}
			}
		}
	}
	if len(deps) == 0 {
		t.Fatal("go list found no packages")
	}
	return deps
}

func topFolder(pkg string) string { return strings.SplitN(pkg, "/", 2)[0] }

// checkFloors returns one line per broken rule: a package not placed, an
// import up a floor, two top-level folders importing each other.
func checkFloors(table map[string]place, deps map[string][]string) []string {
	var bad []string
	folderEdges := map[[2]string]string{}
	for pkg, ds := range deps {
		p, ok := table[pkg]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is on no floor: place it in internal/devsetup/layout_test.go's table", pkg))
			continue
		}
		for _, d := range ds {
			if q, ok := table[d]; ok && q.floor > p.floor {
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s, a floor up (%s)", pkg, floorNames[p.floor], d, floorNames[q.floor]))
			}
			if a, b := topFolder(pkg), topFolder(d); a != b {
				folderEdges[[2]string{a, b}] = pkg + " imports " + d
			}
		}
	}
	for e, why := range folderEdges {
		if back, ok := folderEdges[[2]string{e[1], e[0]}]; ok && e[0] < e[1] {
			bad = append(bad, fmt.Sprintf("folders %s and %s import each other: %s; %s", e[0], e[1], why, back))
		}
	}
	for pkg := range table {
		if _, ok := deps[pkg]; !ok {
			bad = append(bad, fmt.Sprintf("%s is in the floor table but is no package: remove it", pkg))
		}
	}
	sort.Strings(bad)
	return bad
}

// TestLayout checks the floors of docs/development.md with go list.
func TestLayout(t *testing.T) {
	for _, line := range checkFloors(floors, imports(t)) {
		t.Error(line)
	}
}

// TestLayoutRejects shows the checker failing: the real table with a
// deliberate upward import and a folder cycle added, and a new package
// nobody placed.
func TestLayoutRejects(t *testing.T) {
	deps := map[string][]string{}
	for pkg := range floors {
		deps[pkg] = nil
	}
	deps["schema"] = []string{"agent"}        // ground imports the engine
	deps["llm/openai"] = []string{"backends"} // model imports wiring: llm <-> backends
	deps["backends"] = []string{"llm"}
	deps["newpkg"] = nil
	got := strings.Join(checkFloors(floors, deps), "\n")
	for _, want := range []string{
		"schema (ground) imports agent, a floor up (engine)",
		"llm/openai (model) imports backends, a floor up (wiring)",
		"folders backends and llm import each other",
		"newpkg is on no floor",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("checkFloors missed %q; it said:\n%s", want, got)
		}
	}
}

// TestLayoutNoConcreteBackend: the engine and what it uses build without
// the llama.cpp and OpenAI backends (only the wiring floor opens them).
func TestLayoutNoConcreteBackend(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../../agent", "../../server/...", "../../mcpserve").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		switch strings.TrimPrefix(d, module) {
		case "llm/llamacpp", "llm/openai", "backends", "llm/llamalib":
			t.Errorf("the engine or a server depends on the concrete backend %s", d)
		}
	}
}

var update = flag.Bool("update", false, "rewrite docs/development.md's floor diagram from the table")

const (
	docPath    = "../../docs/development.md"
	beginFloor = "<!-- floors: drawn by internal/devsetup TestLayoutDoc from its table; go test ./internal/devsetup -run LayoutDoc -update -->"
	endFloor   = "<!-- floors end -->"
)

// diagram draws the table, top floor first.
func diagram() string {
	var b strings.Builder
	b.WriteString("```\n")
	for f := len(floorNames) - 1; f >= 0; f-- {
		var pkgs []string
		for pkg, p := range floors {
			if p.floor == f {
				pkgs = append(pkgs, pkg)
			}
		}
		sort.Strings(pkgs)
		for i, pkg := range pkgs {
			label := ""
			if i == 0 {
				label = floorNames[f]
			}
			fmt.Fprintf(&b, "%-11s %-22s %s\n", label, pkg, floors[pkg].what)
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// TestLayoutDoc keeps docs/development.md's diagram equal to the table.
func TestLayoutDoc(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginFloor), strings.Index(doc, endFloor)
	if i < 0 || j < i {
		t.Fatalf("%s has no floor diagram between %q and %q", docPath, beginFloor, endFloor)
	}
	want := doc[:i+len(beginFloor)] + "\n" + diagram() + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/development.md's floor diagram differs from the table: go test ./internal/devsetup -run LayoutDoc -update")
}
