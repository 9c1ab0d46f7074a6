package main

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/react"
)

// repoRoot is the repository root as seen from this package's directory,
// where go test runs.
const repoRoot = "../.."

// The scripting contract lives in docs/cli.md: every environment variable,
// every flag of run, plan and exec (and the global ones) and every exit code
// must be documented there. Flags of the other commands (tools, models ...)
// must appear somewhere in docs/.
func TestReadmeDocumentsContract(t *testing.T) {
	cli := readContract(t, "docs/cli.md")
	allDocs := ""
	for _, f := range docFiles(t) {
		allDocs += readContract(t, f)
	}

	ty := reflect.TypeOf(config.Settings{})
	for i := 0; i < ty.NumField(); i++ {
		name := ty.Field(i).Tag.Get("envconfig")
		if name != "" && !strings.Contains(cli, "| `"+name+"` |") {
			t.Errorf("docs/cli.md lacks a row for environment variable %s (field %s)", name, ty.Field(i).Name)
		}
	}

	root, err := newRootCmd(newFactory(&iostreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden {
			return
		}
		doc, where := allDocs, "docs/"
		if cmd == root || cmd.Annotations[annSettings] != "" {
			doc, where = cli, "docs/cli.md"
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Hidden {
				return
			}
			checked++
			// docs/cli.md tables start each flag's cell with it; elsewhere a
			// flag may sit inside a usage line (`tact models pull URL [--force]`).
			mentioned := strings.Contains(doc, "`--"+f.Name)
			if where != "docs/cli.md" {
				mentioned = regexp.MustCompile(`(^|[^\w-])--` + regexp.QuoteMeta(f.Name) + `($|[^\w-])`).MatchString(doc)
			}
			if !mentioned {
				t.Errorf("%s lacks flag --%s of %q", where, f.Name, cmd.CommandPath())
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// Guard the walk itself: run's flags alone are dozens.
	fs := newRunCmd(newFactory(&iostreams{}), nil).Flags()
	if n := len(flagNames(fs)); checked < n {
		t.Errorf("checked only %d flags; run alone has %d", checked, n)
	}

	for _, r := range []react.Reason{react.ReasonSuccess, react.ReasonError, react.ReasonFailure, react.ReasonMaxIterations,
		react.ReasonStalled, react.ReasonTokenBudget, react.ReasonTimeout, react.ReasonCustom, react.ReasonCancelled} {
		row := "| " + strconv.Itoa(r.ExitCode()) + " | `" + string(r) + "` |"
		if !strings.Contains(cli, row) {
			t.Errorf("docs/cli.md exit code table lacks %q", row)
		}
	}
}

func flagNames(fs *pflag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// The README is what a newcomer reads first; the contract lives in docs/.
func TestReadmeIsShort(t *testing.T) {
	const limit = 200
	n := strings.Count(readDoc(t, "README.md"), "\n")
	if n >= limit {
		t.Errorf("README.md has %d lines; keep it under %d and move detail to docs/", n, limit)
	}
}

// Every docs file is reachable from the README's index.
func TestReadmeLinksEveryDoc(t *testing.T) {
	readme := readDoc(t, "README.md")
	for _, f := range docFiles(t) {
		if !strings.Contains(readme, "]("+f+")") {
			t.Errorf("README.md does not link %s", f)
		}
	}
}

// Every relative link in README.md and docs/*.md leads to a file that exists
// and, with a #fragment, to a heading of that file.
func TestReadmeLinksResolve(t *testing.T) {
	files := append([]string{"README.md"}, docFiles(t)...)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		for _, h := range markdownHeadings(readDoc(t, file)) {
			a[h] = true
		}
		anchors[file] = a
		return a
	}
	links := 0
	for _, file := range files {
		for _, l := range markdownLinks(readDoc(t, file)) {
			if isExternalLink(l.target) {
				continue
			}
			links++
			path, frag, _ := strings.Cut(l.target, "#")
			target := file
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				if _, err := os.Stat(filepath.Join(repoRoot, target)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", file, l.line, l.target, target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d: link %q: anchor into a file that is not markdown", file, l.line, l.target)
				continue
			}
			if !anchorsOf(target)[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", file, l.line, l.target, target, frag)
			}
		}
	}
	if links < 20 {
		t.Errorf("found only %d relative links; the link parser is broken", links)
	}
}

func TestReadmeMarkdownHelpers(t *testing.T) {
	for _, tt := range []struct{ heading, want string }{
		{"What is enforced, and by whom", "what-is-enforced-and-by-whom"},
		{"GPU (CUDA)", "gpu-cuda"},
		{"Example plans (no model needed)", "example-plans-no-model-needed"},
		{"`tact models` commands", "tact-models-commands"},
		{"snake_case and 2 digits", "snake_case-and-2-digits"},
		{"Grüße", "grüße"},
	} {
		if got := githubAnchor(tt.heading); got != tt.want {
			t.Errorf("githubAnchor(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}

	doc := "# Title\n\n## Dup\n\n```sh\n# not a heading [x](gone.md)\n```\n\n## Dup\n\n### `tact run` flags ##\n\n" +
		"See [a](a.md#Dup), `[b](code.md)`, [c](https://example.org) and [d](#dup-1).\n"
	if got, want := markdownHeadings(doc), []string{"title", "dup", "dup-1", "tact-run-flags"}; !reflect.DeepEqual(got, want) {
		t.Errorf("markdownHeadings = %q, want %q", got, want)
	}
	var targets []string
	for _, l := range markdownLinks(doc) {
		targets = append(targets, l.target)
	}
	if want := []string{"a.md#Dup", "https://example.org", "#dup-1"}; !reflect.DeepEqual(targets, want) {
		t.Errorf("markdownLinks = %q, want %q", targets, want)
	}
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)

// readContract is readDoc without HTML comments, so a note left for a later
// edit ("a row for --pull goes here") cannot count as documentation.
func readContract(t *testing.T, rel string) string {
	t.Helper()
	return htmlComment.ReplaceAllString(readDoc(t, rel), "")
}

// docFiles lists docs/*.md relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Fatal("no docs/*.md files")
	}
	var files []string
	for _, f := range m {
		files = append(files, "docs/"+filepath.Base(f))
	}
	return files
}

type mdLink struct {
	line   int
	target string
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// markdownLines calls fn for each line outside fenced code blocks, as it is
// and with inline code removed. Indented code blocks are not told apart from
// list text; the docs' one indented block holds neither links nor headings.
func markdownLines(doc string, fn func(n int, line, noCode string)) {
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		fn(n, line, inlineCode.ReplaceAllString(line, ""))
	}
}

func markdownLinks(doc string) []mdLink {
	var links []mdLink
	markdownLines(doc, func(n int, _, noCode string) {
		for _, m := range linkRE.FindAllStringSubmatch(noCode, -1) {
			links = append(links, mdLink{line: n, target: m[1]})
		}
	})
	return links
}

// markdownHeadings returns the anchors GitHub gives the ATX headings of doc,
// duplicates numbered -1, -2, ... as GitHub does.
func markdownHeadings(doc string) []string {
	var anchors []string
	seen := map[string]int{}
	markdownLines(doc, func(_ int, line, _ string) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := githubAnchor(m[1])
		if k := seen[a]; k > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(k)
		} else {
			seen[a] = 1
		}
		anchors = append(anchors, a)
	})
	return anchors
}

// githubAnchor is GitHub's anchor for a heading: lowercase, punctuation
// dropped (letters, digits, '-' and '_' kept), spaces turned into '-'.
// Inline code is given with its backticks, which are punctuation.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isExternalLink(target string) bool {
	return strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:")
}
