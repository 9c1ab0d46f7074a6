package history

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// roundTrip squeezes text and expands it back from the blobs it made.
func roundTrip(t *testing.T, text string) (stored string, blobs []blob) {
	t.Helper()
	stored, blobs = squeeze(text)
	m := map[string]string{}
	for _, b := range blobs {
		m[b.hash] = b.data
	}
	back := expand(stored, func(h string) (string, bool) { d, ok := m[h]; return d, ok })
	if back != text {
		t.Fatalf("%.80q came back as %.80q", text, back)
	}
	return stored, blobs
}

func TestSqueeze(t *testing.T) {
	big := strings.Repeat("x", BlobMin)
	for _, c := range []struct {
		name  string
		text  string
		blobs int
	}{
		{"small", `{"a":"b"}`, 0},
		{"one big value", `{"content":"` + big + `"}`, 1},
		{"the same value thrice", `[{"c":"` + big + `"},"` + big + `",{"d":["` + big + `"]}]`, 1},
		{"two values", `{"a":"` + big + `","b":"` + big + `y"}`, 2},
		{"a big key", `{"` + big + `":1}`, 1},
		{"escapes", `{"a":"` + strings.Repeat(`\"\\`, BlobMin) + `"}`, 1},
		{"a value that looks like a reference", `{"a":"\u0000tact-blob:` + strings.Repeat("0", 64) + `"}`, 1},
		{"not JSON, with the prefix", `{"a":"\u0000tact-blob:` + strings.Repeat("0", 64) + `"`, 1},
		{"not JSON, big", `{"a":"` + big, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			stored, blobs := roundTrip(t, c.text)
			if len(blobs) != c.blobs {
				t.Errorf("%d blobs, want %d", len(blobs), c.blobs)
			}
			if c.blobs > 0 && len(stored) >= len(c.text) && c.name != "a value that looks like a reference" && !strings.HasPrefix(c.name, "not JSON") {
				t.Errorf("stored %d bytes of %d", len(stored), len(c.text))
			}
			if json.Valid([]byte(c.text)) && !json.Valid([]byte(stored)) {
				t.Errorf("stored text is not JSON: %.200q", stored)
			}
		})
	}
}

// FuzzSqueeze: whatever the text, what is stored expands back to it.
func FuzzSqueeze(f *testing.F) {
	for _, s := range []string{`{}`, `"\u0000tact-blob:` + strings.Repeat("a", 64) + `"`, `["x","\u0000tact-blob:"]`, `{"a":"\"`, "plain \"text\""} {
		f.Add(s, uint16(0))
	}
	f.Fuzz(func(t *testing.T, text string, pad uint16) {
		// pad makes a literal long enough to be a blob.
		if pad > 0 {
			text = strings.Replace(text, `""`, `"`+strings.Repeat("p", BlobMin+int(pad)%64)+`"`, 1)
		}
		roundTrip(t, text)
	})
}

// TestBigValueStoredOnce: a 1 MB write_file's content, which a run's
// record carries in its plan, the step's arguments, three trace events, the
// result and the checkpoint, takes about 1 MB of the database, and reads
// back whole everywhere.
func TestBigValueStoredOnce(t *testing.T) {
	s := openTest(t, Options{})
	content := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	args := `{"path":"big.txt","content":"` + content + `"}`
	plan := `[{"tool":"write_file","args":` + args + `}]`
	rec := s.Begin(Run{ID: "big", Query: "write it", Plan: plan})
	rec.Event(`{"event":"plan","plan":` + plan + `}`)
	rec.Event(`{"event":"action","args":` + args + `}`)
	rec.Checkpoint(`{"records":[{"args":` + args + `}]}`)
	rec.Step(Step{Index: 0, Tool: "write_file", Args: args, Observation: "wrote big.txt"})
	rec.Event(`{"event":"step","action":{"args":` + args + `}}`)
	rec.End(Final{Reason: "max_iterations", ExitCode: 4, Result: `{"trace":{"steps":[{"args":` + args + `}]}}`})
	flush(t, s)
	ctx := context.Background()
	size, err := s.usedSize(ctx)
	mustDo(t, err)
	if size > 3<<19 {
		t.Errorf("the database uses %d bytes for one 1 MiB value, want about 1 MiB", size)
	}
	r, err := s.Get(ctx, "big")
	mustDo(t, err)
	if r.Plan != plan || !strings.Contains(r.Result, content) {
		t.Errorf("plan or result not read back whole")
	}
	steps, err := s.Steps(ctx, "big")
	mustDo(t, err)
	if len(steps) != 1 || steps[0].Args != args {
		t.Errorf("step args not read back whole")
	}
	n := 0
	mustDo(t, s.Events(ctx, "big", func(line string) error {
		if strings.Contains(line, content) {
			n++
		}
		return nil
	}))
	if n != 3 {
		t.Errorf("%d events hold the content, want 3", n)
	}
	cp, err := s.Checkpoint(ctx, "big")
	mustDo(t, err)
	if !strings.Contains(cp, content) {
		t.Error("checkpoint not read back whole")
	}
	list, err := s.List(ctx, Filter{})
	mustDo(t, err)
	if len(list) != 1 || list[0].Plan != plan {
		t.Error("List's plan not read back whole")
	}
	// Pruned with its run.
	_, err = s.Prune(ctx, 0, 1)
	mustDo(t, err)
	var blobs int
	mustDo(t, s.db.QueryRowContext(ctx, "SELECT count(*) FROM blobs").Scan(&blobs))
	if blobs != 0 {
		t.Errorf("%d blobs left after the run was pruned", blobs)
	}
}
