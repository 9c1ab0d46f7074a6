package config

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func all(string) bool  { return true }
func none(string) bool { return false }

func TestLoadDefaultsAndOverrides(t *testing.T) {
	t.Setenv("REACT_RETRY_BUFFER", "5")
	t.Setenv("REACT_REPLAN_FAILURE_THRESHOLD", "")
	t.Setenv("TACT_ALLOW_TOOLS", "read_file, jq,")
	t.Setenv("TACT_TOOL_TIMEOUT", "5s")
	s, o := Load()
	if err := o.Check(s, all, none); err != nil {
		t.Fatal(err)
	}
	if s.RetryBuffer != 5 || s.ReplanThreshold != 2 || s.MaxIterations != 0 || !s.RequireThought {
		t.Fatalf("%+v", s)
	}
	if !reflect.DeepEqual(s.AllowTools, []string{"read_file", "jq"}) || s.ToolTimeout != 5*time.Second {
		t.Fatalf("%+v", s)
	}
	if s.Temperature != 0.2 || s.Seed != -1 || s.KVCacheType != "f16" || s.Sandbox != "workspace-write" {
		t.Fatalf("%+v", s)
	}
}

// Regression: list variables were split on commas, so a regexp like
// [0-9]{4,} became two broken ones and "nothing here, 2026" two phrases.
// The boolean spellings of an older --flash-attention keep their meaning.
func TestFlashAttnMode(t *testing.T) {
	for in, want := range map[string]string{"": "auto", "auto": "auto", "ON": "on", "true": "on", "1": "on", "off": "off", "false": "off", "0": "off"} {
		if got, ok := FlashAttnMode(in); !ok || got != want {
			t.Errorf("FlashAttnMode(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := FlashAttnMode("2"); ok {
		t.Error(`FlashAttnMode("2") accepted`)
	}
}

func TestListVariablesSplitOnNewlines(t *testing.T) {
	t.Setenv("TACT_REDACT", "[0-9]{4,}\nsecret-[a-z]+\r\n")
	t.Setenv("TACT_SUCCESS_PHRASES", "nothing here, 2026")
	t.Setenv("TACT_FAILURE_PHRASES", "a, b\n\n c ")
	t.Setenv("TACT_ENV", "LIST=a,b,c\nB=2")
	s, o := Load()
	if err := o.Check(s, all, none); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		got, want []string
	}{
		{s.Redact, []string{"[0-9]{4,}", "secret-[a-z]+"}},
		{s.SuccessPhrases, []string{"nothing here, 2026"}},
		{s.FailurePhrases, []string{"a, b", " c "}},
		{s.Env, []string{"LIST=a,b,c", "B=2"}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestBadVariables(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		{"TACT_MAX_ITERATIONS", "abc", "TACT_MAX_ITERATIONS=abc: not an integer"},
		{"TACT_MAX_ITERATIONS", "99999999999999999999", "TACT_MAX_ITERATIONS=99999999999999999999: integer out of range"},
		{"TACT_TIMEOUT", "5", "TACT_TIMEOUT=5: not a duration (want a number with a unit, e.g. 90s, 5m or 1h30m)"},
		{"TACT_JSON", "yes please", `TACT_JSON="yes please": not a boolean (want 1, 0, true or false)`},
		{"TACT_TEMPERATURE", "warm", "TACT_TEMPERATURE=warm: not a number"},
		{"TACT_TEMPERATURE", "NaN", "TACT_TEMPERATURE=NaN (--temperature): must be a finite number from 0 to 10"},
		{"TACT_TOP_P", "1.5", "TACT_TOP_P=1.5 (--top-p): must be a finite number above 0 and at most 1"},
		{"REACT_REPLAN_FAILURE_THRESHOLD", "0", "REACT_REPLAN_FAILURE_THRESHOLD=0 (--replan-threshold): must be at least 1"},
		{"TACT_ENV", "GREETING", "TACT_ENV=GREETING (--env): want KEY=VALUE"},
		{"TACT_KV_CACHE_TYPE", "q2_k", "TACT_KV_CACHE_TYPE=q2_k (--kv-cache-type): want f16, q8_0 or q4_0"},
		{"TACT_FLASH_ATTENTION", "maybe", "TACT_FLASH_ATTENTION=maybe (--flash-attention): want auto, on or off"},
	}
	for _, tc := range tests {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			s, o := Load() // never fails
			err := o.Check(s, all, none)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
			// A command that does not use the setting does not see it.
			if err := o.Check(s, func(f string) bool { return Var(f) != tc.name }, none); err != nil {
				t.Fatalf("unused setting reported: %v", err)
			}
			// A flag given on the command line silences the variable.
			flagged := func(f string) bool { return Var(f) == tc.name }
			*s = *Defaults()
			if err := o.Check(s, all, flagged); err != nil {
				t.Fatalf("flag did not override: %v", err)
			}
		})
	}
}

func TestValidateRanges(t *testing.T) {
	tests := []struct {
		set  func(*Settings)
		want string
	}{
		{func(s *Settings) { s.Temperature = float32(math.NaN()) }, "--temperature NaN: must be a finite number from 0 to 10"},
		{func(s *Settings) { s.Temperature = float32(math.Inf(1)) }, "--temperature +Inf: must be a finite number from 0 to 10"},
		{func(s *Settings) { s.Temperature = -0.1 }, "--temperature -0.1: must be a finite number from 0 to 10"},
		{func(s *Settings) { s.Temperature = 11 }, "--temperature 11: must be a finite number from 0 to 10"},
		{func(s *Settings) { s.TopP = 1.01 }, "--top-p 1.01: must be a finite number above 0 and at most 1"},
		{func(s *Settings) { s.TopP = 0 }, "--top-p 0: must be a finite number above 0 and at most 1"},
		{func(s *Settings) { s.MinP = -1 }, "--min-p -1: must be a finite number from 0 to 1"},
		{func(s *Settings) { s.TopK = -1 }, "--top-k -1: must not be negative"},
		{func(s *Settings) { s.CtxSize = -1 }, "--ctx-size -1: must be from 0 to 16777216"},
		{func(s *Settings) { s.CtxSize = 2000000000 }, "--ctx-size 2000000000: must be from 0 to 16777216"},
		{func(s *Settings) { s.Threads = -4 }, "--threads -4: must not be negative"},
		{func(s *Settings) { s.BatchSize = 0 }, "--batch-size 0: must be from 1 to 65536"},
		{func(s *Settings) { s.BatchSize = 1 << 20 }, "--batch-size 1048576: must be from 1 to 65536"},
		{func(s *Settings) { s.MaxTokens = -1 }, "--max-tokens -1: must not be negative"},
		{func(s *Settings) { s.GPULayers = -1 }, "--gpu-layers -1: must not be negative"},
		{func(s *Settings) { s.Seed = -2 }, "--seed -2: must be -1 (random) or from 0 to 4294967295"},
		{func(s *Settings) { s.Seed = 1 << 32 }, "--seed 4294967296: must be -1 (random) or from 0 to 4294967295"},
		{func(s *Settings) { s.MaxIterations = -1 }, "--max-iterations -1: must not be negative"},
		{func(s *Settings) { s.TokenBudget = -5 }, "--token-budget -5: must not be negative"},
		{func(s *Settings) { s.Timeout = -time.Second }, "--timeout -1s: must not be negative"},
		{func(s *Settings) { s.ToolTimeout = -time.Second }, "--tool-timeout -1s: must not be negative"},
		{func(s *Settings) { s.StallThreshold = 0 }, "--stall-threshold 0: must be at least 1"},
		{func(s *Settings) { s.MaxObservationTokens = 0 }, "--max-observation-tokens 0: must be at least 1"},
		{func(s *Settings) { s.RetryBuffer = -1 }, "--retry-buffer -1: must not be negative"},
		{func(s *Settings) { s.MinThoughtLength = -1 }, "--min-thought-length -1: must not be negative"},
		{func(s *Settings) { s.Env = []string{"=x"} }, "--env =x: want KEY=VALUE"},
	}
	for _, tc := range tests {
		s := Defaults()
		tc.set(s)
		err := s.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v\nwant %s", err, tc.want)
		}
	}
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	ok := Defaults()
	ok.Temperature, ok.TopP, ok.MinP, ok.Seed, ok.TopK, ok.MaxTokens = 0, 1e-6, 0, 4294967295, 0, 0
	if err := ok.Validate(); err != nil {
		t.Fatalf("edge values refused: %v", err)
	}
}

func TestCapThreads(t *testing.T) {
	s := Defaults()
	s.Threads = 1000
	if w := s.CapThreads(); !strings.Contains(w, "--threads 1000 is more than the") || s.Threads < 1 || s.Threads >= 1000 {
		t.Fatalf("%q %d", w, s.Threads)
	}
	s.Threads = 0
	if w := s.CapThreads(); w != "" || s.Threads != 0 {
		t.Fatalf("%q %d", w, s.Threads)
	}
}

// Every field has a variable, and every type is one Load can parse
// (Defaults panics otherwise). cmd/tact checks that flags carry flag tags.
func TestTags(t *testing.T) {
	Defaults()
	for _, f := range Fields() {
		if Var(f) == "" {
			t.Errorf("%s has no envconfig tag", f)
		}
	}
}

func TestDirs(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/d")
	t.Setenv("XDG_CONFIG_HOME", "/c")
	s := &Settings{}
	if s.ModelsDirectory() != "/d/tact/models" || s.PolicyPath() != "/c/tact/policy.json" {
		t.Fatal(s.ModelsDirectory(), s.PolicyPath())
	}
}

// FuzzSplitLines: items come back exactly as written one a line (commas,
// spaces and all), none holds a newline, and blank lines are dropped.
func FuzzSplitLines(f *testing.F) {
	for _, seed := range []string{"", "[0-9]{4,}", "a,b\nc", "LIST=a,b,c\r\nB=2\n", "\n\n", " x \n\ty"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		items := SplitLines(v)
		for _, it := range items {
			if strings.ContainsRune(it, '\n') || strings.TrimSpace(it) == "" || strings.HasSuffix(it, "\r") {
				t.Fatalf("bad item %q from %q", it, v)
			}
		}
		again := SplitLines(strings.Join(items, "\n"))
		if !reflect.DeepEqual(again, items) {
			t.Fatalf("not stable: %q -> %q -> %q", v, items, again)
		}
		for _, it := range SplitComma(v) {
			if strings.Contains(it, ",") || it != strings.TrimSpace(it) || it == "" {
				t.Fatalf("bad comma item %q from %q", it, v)
			}
		}
	})
}
