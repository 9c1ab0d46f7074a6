package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"mvdan.cc/sh/v3/syntax"
)

// The shell examples of README.md and docs/*.md: every command line in a
// fenced sh, console, bash, shell or crontab block runs in a testscript,
// through the `doc` command (the command as printed, found in the doc), or
// its block is marked, on the line before its fence, with why it does not:
//
//	<!-- doc-test: needs network: REASON -->   a download, a real model, a server elsewhere
//	<!-- doc-test: not run: REASON -->         a make target (it runs these tests)
//	<!-- doc-test: run by TestName -->         a Go test in this package runs it
//
// A block that starts with #! is a script: a testscript writes it out with
// `docscript` and runs it.

// docLangs are the code blocks holding shell examples.
var docLangs = map[string]bool{"sh": true, "console": true, "bash": true, "shell": true, "crontab": true}

var (
	docMarker    = regexp.MustCompile(`^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$`)
	docFence     = regexp.MustCompile("^(\\s*)(```|~~~)(\\w*)\\s*$")
	docMarkerUse = regexp.MustCompile(`^(needs network|not run): \S|^run by (Test\w+)$`)
)

// docBlock is one fenced shell block of a doc.
type docBlock struct {
	file, lang, marker string
	line               int      // of the opening fence
	script             bool     // starts with #!
	text               string   // the block, its indentation removed
	commands           []string // its command lines, as docCommands reads them
	err                error    // why they could not be read (not shell)
}

// docBlocksOf reads the shell blocks of doc (named file).
func docBlocksOf(file, doc string) []docBlock {
	var blocks []docBlock
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := docFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence, lang := m[1], m[2], m[3]
		start := i
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[i], " "), fence); i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !docLangs[lang] {
			continue
		}
		b := docBlock{file: file, lang: lang, line: start + 1, text: strings.Join(body, "\n")}
		for j := start - 1; j >= 0 && strings.TrimSpace(lines[j]) != ""; j-- {
			if mm := docMarker.FindStringSubmatch(lines[j]); mm != nil {
				b.marker = mm[1]
				break
			}
		}
		b.script = len(body) > 0 && strings.HasPrefix(body[0], "#!")
		if !b.script {
			b.commands, b.err = docCommands(lang, body)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

var continuation = regexp.MustCompile(`[ \t]*\\\n[ \t]*`)

// docCommands reads a block's command lines: in a console block the lines
// after "$ " (with their continuation lines), in a crontab the command
// after the five time fields, else every statement. Each is the statement
// as printed, its comment dropped and continuation lines joined with one
// space.
func docCommands(lang string, body []string) ([]string, error) {
	var units []string
	switch lang {
	case "console":
		for i := 0; i < len(body); i++ {
			cmd, ok := strings.CutPrefix(body[i], "$ ")
			if !ok {
				continue
			}
			for strings.HasSuffix(cmd, "\\") && i+1 < len(body) {
				i++
				cmd += "\n" + body[i]
			}
			units = append(units, cmd)
		}
	case "crontab":
		for i := 0; i < len(body); i++ {
			line := body[i]
			if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
				continue
			}
			for strings.HasSuffix(line, "\\") && i+1 < len(body) {
				i++
				line += "\n" + body[i]
			}
			rest := line
			for range 5 {
				rest = strings.TrimLeft(rest, " \t")
				if j := strings.IndexAny(rest, " \t"); j >= 0 {
					rest = rest[j:]
				}
			}
			units = append(units, strings.TrimLeft(rest, " \t"))
		}
	default:
		units = []string{strings.Join(body, "\n")}
	}
	var cmds []string
	for _, u := range units {
		f, err := syntax.NewParser(syntax.KeepComments(false)).Parse(strings.NewReader(u), "")
		if err != nil {
			return nil, fmt.Errorf("%q: %v", u, err)
		}
		for _, st := range f.Stmts {
			text := u[st.Pos().Offset():st.End().Offset()]
			cmds = append(cmds, continuation.ReplaceAllString(text, " "))
		}
	}
	return cmds, nil
}

// allDocBlocks reads the shell blocks of README.md and docs/*.md.
func allDocBlocks(t *testing.T) []docBlock {
	t.Helper()
	var all []docBlock
	for _, f := range append([]string{"README.md"}, docFiles(t)...) {
		all = append(all, docBlocksOf(f, readDoc(t, f))...)
	}
	return all
}

// scriptWords splits a testscript line into words as testscript does:
// spaces separate, single quotes keep spaces (” is a quote inside them).
func scriptWords(line string) []string {
	var words []string
	var w strings.Builder
	in, have := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case in && c == '\'' && i+1 < len(line) && line[i+1] == '\'':
			w.WriteByte('\'')
			i++
		case c == '\'':
			in, have = !in, true
		case !in && (c == ' ' || c == '\t'):
			if have {
				words = append(words, w.String())
				w.Reset()
				have = false
			}
		case !in && c == '#' && !have:
			return words
		default:
			w.WriteByte(c)
			have = true
		}
	}
	if have {
		words = append(words, w.String())
	}
	return words
}

// docUse is what the testscripts run of the docs: "FILE\x00COMMAND" for
// each doc line, "FILE\x00#N" for each docscript.
func docUses(t *testing.T) map[string]string {
	t.Helper()
	scripts, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no testscripts: %v", err)
	}
	uses := map[string]string{}
	for _, s := range scripts {
		f, err := os.Open(s)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.HasPrefix(line, "-- ") {
				break // the archive's files
			}
			w := scriptWords(line)
			if len(w) > 0 && w[0] == "!" {
				w = w[1:]
			}
			if len(w) == 0 {
				continue
			}
			where := fmt.Sprintf("%s:%d", filepath.Base(s), n)
			switch w[0] {
			case "doc":
				if file, cmd, _, _, err := docArgs(w[1:]); err == nil {
					uses[file+"\x00"+cmd] = where
				}
			case "docscript":
				if len(w) == 4 {
					uses[w[1]+"\x00#"+w[2]] = where
				}
			}
		}
		f.Close()
	}
	return uses
}

func TestDocShellExamples(t *testing.T) {
	blocks := allDocBlocks(t)
	uses := docUses(t)
	tests := testNames(t)
	commands, run, marked := 0, 0, 0
	scriptN := map[string]int{}
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		if b.script {
			scriptN[b.file]++
		}
		if b.marker != "" {
			m := docMarkerUse.FindStringSubmatch(b.marker)
			switch {
			case m == nil:
				t.Errorf("%s: doc-test marker %q: want \"needs network: REASON\", \"not run: REASON\" or \"run by TestName\"", where, b.marker)
			case m[2] != "" && !tests[m[2]]:
				t.Errorf("%s: doc-test marker names %s, which is no test of this package", where, m[2])
			}
			marked++
			continue
		}
		if b.script {
			key := fmt.Sprintf("%s\x00#%d", b.file, scriptN[b.file])
			if uses[key] == "" {
				t.Errorf("%s: script %d of %s runs in no testscript (docscript %s %d FILE) and is not marked", where, scriptN[b.file], b.file, b.file, scriptN[b.file])
			}
			run++
			continue
		}
		if b.err != nil {
			t.Errorf("%s: %v", where, b.err)
		}
		for _, c := range b.commands {
			commands++
			if uses[b.file+"\x00"+c] == "" {
				t.Errorf("%s: %q runs in no testscript (doc %s '...') and its block is not marked", where, c, b.file)
				continue
			}
			run++
		}
	}
	t.Logf("%d blocks: %d commands and scripts run by testscripts, %d blocks marked", len(blocks), run, marked)
	if len(blocks) < 30 || run < 20 {
		t.Errorf("found %d blocks, %d run; the extraction is broken", len(blocks), run)
	}
	_ = commands
}

// testNames are the Test functions of this package.
func testNames(t *testing.T) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob("*_test.go")
	names := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
	}
	return names
}

// No page is a draft any more.
func TestDocsAreNotDrafts(t *testing.T) {
	draft := regexp.MustCompile(`\bDraft\b`)
	for _, f := range append([]string{"README.md"}, docFiles(t)...) {
		for n, line := range strings.Split(readDoc(t, f), "\n") {
			if draft.MatchString(line) {
				t.Errorf("%s:%d: %s", f, n+1, line)
			}
		}
	}
}

func TestDocCommands(t *testing.T) {
	doc := "text\n<!-- doc-test: needs network: a model -->\n```sh\nbin/tact models pull x   # 1 GB\ntact run \\\n  \"q\" | jq .x\n# {\"out\": 1}\nexport A=\"$(printf 'a\\nb')\"\n```\n\n" +
		"  ```console\n  $ tact exec p.jsonl --yes   # note\n  output\n  $ printf 'a\\n' \\\n      | tact chat\n  ```\n" +
		"```crontab\n# m h\n*/30 * * * * cd /srv && tact exec \\\n    p.jsonl || echo \"tact exit $?\"\n```\n" +
		"```bash\n#!/bin/bash\nexit 0\n```\n```json\n{}\n```\n"
	blocks := docBlocksOf("x.md", doc)
	if len(blocks) != 4 {
		t.Fatalf("%d blocks: %+v", len(blocks), blocks)
	}
	want := [][]string{
		{"bin/tact models pull x", `tact run "q" | jq .x`, `export A="$(printf 'a\nb')"`},
		{"tact exec p.jsonl --yes", `printf 'a\n' | tact chat`},
		{`cd /srv && tact exec p.jsonl || echo "tact exit $?"`},
		nil,
	}
	for i, b := range blocks {
		if !slices.Equal(b.commands, want[i]) {
			t.Errorf("block %d: %q, want %q", i, b.commands, want[i])
		}
	}
	if blocks[0].marker != "needs network: a model" || blocks[1].marker != "" || !blocks[3].script {
		t.Errorf("markers %q %q, script %v", blocks[0].marker, blocks[1].marker, blocks[3].script)
	}
	for line, want := range map[string][]string{
		`doc README.md 'a ''b'' c' # x`: {"doc", "README.md", "a 'b' c"},
		`! doc -sub a=b f 'x y'`:        {"!", "doc", "-sub", "a=b", "f", "x y"},
		`doc f ''`:                      {"doc", "f", ""},
	} {
		if got := scriptWords(line); !slices.Equal(got, want) {
			t.Errorf("scriptWords(%q) = %q, want %q", line, got, want)
		}
	}
}

// docArgs parses doc's arguments: [-sub OLD=NEW]... [-then CMD] FILE COMMAND.
func docArgs(args []string) (file, command string, subs [][2]string, then string, err error) {
	for len(args) > 2 {
		switch args[0] {
		case "-sub":
			old, new, ok := strings.Cut(args[1], "=")
			if !ok {
				return "", "", nil, "", fmt.Errorf("-sub %q: want OLD=NEW", args[1])
			}
			subs = append(subs, [2]string{old, new})
		case "-then":
			then = args[1]
		default:
			return "", "", nil, "", fmt.Errorf("unknown option %q", args[0])
		}
		args = args[2:]
	}
	if len(args) != 2 {
		return "", "", nil, "", fmt.Errorf("usage: doc [-sub OLD=NEW]... [-then CMD] FILE COMMAND")
	}
	return args[0], args[1], subs, then, nil
}

var binTact = regexp.MustCompile(`(^|[\s|;&(])bin/tact\b`)

// cmdDoc runs a command line of a doc as printed, with bash, in the
// script's directory and environment:
//
//	doc [-sub OLD=NEW]... [-then CMD] FILE COMMAND
//
// COMMAND must be one of FILE's command lines (TestDocShellExamples reads
// them the same way). bin/tact is the tact under test (tact on PATH); each
// -sub replaces text first (a path such as /srv/app, a placeholder run id);
// -then runs CMD after it in the same shell (to look at what it set). Its
// stdout and stderr are the next stdout and stderr; ! doc wants it to fail.
func cmdDoc(ts *testscript.TestScript, neg bool, args []string) {
	file, command, subs, then, err := docArgs(args)
	if err != nil {
		ts.Fatalf("doc: %v", err)
	}
	blocks := docBlocksOf(file, ts.ReadFile(filepath.Join(ts.Getenv("REPO"), file)))
	found := false
	for _, b := range blocks {
		found = found || slices.Contains(b.commands, command)
	}
	if !found {
		ts.Fatalf("doc: %s has no command line %q", file, command)
	}
	run := binTact.ReplaceAllString(command, "${1}tact")
	for _, s := range subs {
		run = strings.ReplaceAll(run, s[0], s[1])
	}
	if then != "" {
		run += "\n" + then
	}
	err = ts.Exec("bash", "-c", run)
	switch {
	case err != nil && !neg:
		ts.Fatalf("doc %s %q: %v", file, command, err)
	case err == nil && neg:
		ts.Fatalf("doc %s %q: unexpected success", file, command)
	}
}

// cmdDocScript writes the Nth script block (one starting with #!) of a
// doc to a file, executable:
//
//	docscript FILE N DEST
func cmdDocScript(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: docscript FILE N DEST")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	blocks := docBlocksOf(args[0], ts.ReadFile(filepath.Join(ts.Getenv("REPO"), args[0])))
	i := 0
	for _, b := range blocks {
		if b.script {
			if i++; i == n {
				ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(b.text+"\n"), 0o755))
				return
			}
		}
	}
	ts.Fatalf("docscript: %s has %d scripts, not %d", args[0], i, n)
}
