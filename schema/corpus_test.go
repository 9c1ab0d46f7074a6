package schema

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusDir holds public schemas for the grammar's differential test
// (README.md there): tact's test schemas, JSON Schema Store documents,
// MCP reference servers' tool schemas and BFCL function parameters.
const corpusDir = "testdata/corpus"

// The corpus is what its manifest says: one small JSON file a schema,
// each with its source, commit and licence; every schema compiles as
// --schema does and embedded as final_answer's answer.
func TestCorpus(t *testing.T) {
	f, err := os.Open(filepath.Join(corpusDir, "manifest.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct{ File, Source, Commit, Licence string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("manifest: %v", err)
		}
		if e.File == "" || e.Source == "" || e.Commit == "" || e.Licence == "" || listed[e.File] {
			t.Errorf("manifest: %s", sc.Text())
		}
		listed[e.File] = true
	}
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	sort.Strings(files)
	perSource := map[string]int{}
	for _, path := range files {
		name := filepath.Base(path)
		if !listed[name] {
			t.Errorf("%s: not in the manifest", name)
		}
		delete(listed, name)
		perSource[strings.SplitN(name, "-", 2)[0]]++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) >= 64<<10 {
			t.Errorf("%s: %d bytes", name, len(b))
		}
		raw, err := CompileAnswer(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := Compile(FinalAnswerArgs(raw)); err != nil {
			t.Errorf("%s: embedded: %v", name, err)
		}
	}
	for name := range listed {
		t.Errorf("manifest lists %s, which is not there", name)
	}
	t.Logf("%d schemas: %v", len(files), perSource)
}
