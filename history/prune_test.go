package history

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// counts is the rows left in each table.
func counts(t *testing.T, s *Store) (runs, steps, events, fts int) {
	t.Helper()
	ctx := context.Background()
	for q, n := range map[string]*int{
		"SELECT count(*) FROM runs": &runs, "SELECT count(*) FROM steps": &steps,
		"SELECT count(*) FROM events": &events, "SELECT count(*) FROM run_fts": &fts,
	} {
		mustDo(t, s.db.QueryRowContext(ctx, q).Scan(n))
	}
	return
}

func TestPruneByAge(t *testing.T) {
	c := &clock{now: at(30 * 24 * time.Hour)}
	s := openTest(t, Options{Now: c.Now})
	for day := range 30 {
		rec := s.Begin(Run{ID: fmt.Sprintf("day%02d", day), Query: fmt.Sprintf("query%02d", day), StartedAt: at(time.Duration(day) * 24 * time.Hour)})
		rec.Step(Step{Index: 0, Observation: fmt.Sprintf("obs%02d", day)})
		rec.Step(Step{Index: 1})
		rec.Event("e")
		rec.End(Final{Reason: "answered"})
	}
	flush(t, s)
	res, err := s.Prune(context.Background(), 10*24*time.Hour, 0)
	mustDo(t, err)
	if res.Runs != 20 {
		t.Errorf("pruned %d runs, want 20", res.Runs)
	}
	runs, steps, events, fts := counts(t, s)
	if runs != 10 || steps != 20 || events != 10 || fts != 30 {
		t.Errorf("left %d runs, %d steps, %d events, %d search rows; want 10, 20, 10, 30", runs, steps, events, fts)
	}
	assertIDs(t, s, Filter{Query: "obs19"}, nil)
	assertIDs(t, s, Filter{Query: "query19"}, nil)
	assertIDs(t, s, Filter{Query: "obs20"}, []string{"day20"})
	assertIDs(t, s, Filter{Limit: 1, Until: at(21 * 24 * time.Hour)}, []string{"day20"})
}

func TestPruneBySize(t *testing.T) {
	s := openTest(t, Options{})
	text := strings.Repeat("some observed output ", 200) // 4 KB
	for i := range 200 {
		rec := s.Begin(Run{ID: fmt.Sprintf("run%03d", i), StartedAt: at(time.Duration(i) * time.Minute)})
		rec.Step(Step{Index: 0, Observation: text})
		rec.Event(text)
		rec.End(Final{Reason: "answered"})
	}
	flush(t, s)
	ctx := context.Background()
	before, err := s.usedSize(ctx)
	mustDo(t, err)
	fileBefore := fileSize(t, s.path) + fileSize(t, s.path+"-wal")
	limit := before / 2
	res, err := s.Prune(ctx, 0, limit)
	mustDo(t, err)
	if res.SizeAfter > limit || res.Runs == 0 {
		t.Errorf("pruned %d runs, %d bytes left of %d; want at most %d", res.Runs, res.SizeAfter, before, limit)
	}
	if after := fileSize(t, s.path) + fileSize(t, s.path+"-wal"); after > fileBefore*2/3 {
		t.Errorf("files hold %d bytes after pruning, %d before: free pages not given back", after, fileBefore)
	}
	// The oldest went: what is left is the newest runs, all of them.
	left, err := s.List(ctx, Filter{Limit: -1})
	mustDo(t, err)
	if len(left) != 200-res.Runs {
		t.Fatalf("%d runs left after pruning %d of 200", len(left), res.Runs)
	}
	for i, r := range left {
		if want := fmt.Sprintf("run%03d", 199-i); r.ID != want {
			t.Fatalf("left[%d] = %s, want %s", i, r.ID, want)
		}
	}
	runs, steps, events, _ := counts(t, s)
	if steps != runs || events != runs {
		t.Errorf("%d runs left with %d steps, %d events", runs, steps, events)
	}
	// Within the limit already: nothing to do.
	res, err = s.Prune(ctx, 0, limit)
	if err != nil || res.Runs != 0 {
		t.Errorf("second Prune: %+v, %v; want nothing pruned", res, err)
	}
}

func TestMaybePruneOncePerDay(t *testing.T) {
	c := &clock{now: at(0)}
	s := openTest(t, Options{Now: c.Now})
	record(s, Run{ID: "old", StartedAt: at(-100 * 24 * time.Hour)}, 1, Final{Reason: "answered"})
	flush(t, s)
	ctx := context.Background()
	steps := []struct {
		now    time.Duration
		add    string // a run this old to add before
		ran    bool
		pruned int
	}{
		{now: 0, ran: true, pruned: 1},
		{now: time.Hour, add: "old2", ran: false},
		{now: 23 * time.Hour, ran: false},
		{now: 25 * time.Hour, ran: true, pruned: 1},
		{now: 26 * time.Hour, ran: false},
		{now: -time.Hour, ran: true}, // clock went back: prune rather than never
	}
	for i, st := range steps {
		c.Set(at(st.now))
		if st.add != "" {
			record(s, Run{ID: st.add, StartedAt: at(-100 * 24 * time.Hour)}, 0, Final{Reason: "answered"})
			flush(t, s)
		}
		ran, res, err := s.MaybePrune(ctx, 30*24*time.Hour, 0)
		if err != nil || ran != st.ran || res.Runs != st.pruned {
			t.Errorf("step %d at +%v: MaybePrune = %v, %d pruned, %v; want %v, %d", i, st.now, ran, res.Runs, err, st.ran, st.pruned)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	mustDo(t, err)
	return fi.Size()
}

// TestMaybePruneWhenOverSize: a history a quarter over maxSize is pruned
// at once, whenever the last prune was (a lowered --history-max-size holds
// from the next run); within a quarter it waits for the day.
func TestMaybePruneWhenOverSize(t *testing.T) {
	c := &clock{now: at(0)}
	s := openTest(t, Options{Now: c.Now})
	ctx := context.Background()
	ran, _, err := s.MaybePrune(ctx, 0, 0) // yesterday's prune, say
	mustDo(t, err)
	if !ran {
		t.Fatal("the first prune did not run")
	}
	text := strings.Repeat("some observed output ", 200)
	for i := range 100 {
		record(s, Run{ID: fmt.Sprintf("run%03d", i), StartedAt: at(time.Duration(i) * time.Minute)}, 0, Final{Reason: "answered", Answer: text})
	}
	flush(t, s)
	size, err := s.usedSize(ctx)
	mustDo(t, err)
	c.Set(at(time.Hour))
	if ran, _, err := s.MaybePrune(ctx, 0, size-size/10); ran || err != nil {
		t.Errorf("10%% over: pruned %v, %v; want it left for the day", ran, err)
	}
	ran, res, err := s.MaybePrune(ctx, 0, size/2)
	if !ran || err != nil || res.SizeAfter > size/2 {
		t.Errorf("twice the size: pruned %v, %+v, %v", ran, res, err)
	}
}

// TestMaybePruneCutShortIsDueAgain: a prune that did not finish (its
// context ended) is not recorded, so the next one runs.
func TestMaybePruneCutShortIsDueAgain(t *testing.T) {
	c := &clock{now: at(0)}
	s := openTest(t, Options{Now: c.Now})
	record(s, Run{ID: "old", StartedAt: at(-100 * 24 * time.Hour)}, 1, Final{Reason: "answered"})
	flush(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.MaybePrune(ctx, 30*24*time.Hour, 0); err == nil {
		t.Fatal("a cancelled prune reported no error")
	}
	ran, res, err := s.MaybePrune(context.Background(), 30*24*time.Hour, 0)
	if !ran || err != nil || res.Runs != 1 {
		t.Errorf("after a cut prune: %v, %+v, %v; want it run again", ran, res, err)
	}
}
