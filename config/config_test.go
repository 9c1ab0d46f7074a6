package config

import (
	"testing"
	"time"
)

func TestLoadDefaultsAndOverrides(t *testing.T) {
	t.Setenv("REACT_RETRY_BUFFER", "5")
	t.Setenv("REACT_REPLAN_FAILURE_THRESHOLD", "")
	t.Setenv("TACT_ALLOW_TOOLS", "read_file,jq")
	t.Setenv("TACT_TOOL_TIMEOUT", "5s")
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if s.RetryBuffer != 5 || s.ReplanThreshold != 2 || s.MaxIterations != 10 || !s.RequireThought {
		t.Fatalf("%+v", s)
	}
	if len(s.AllowTools) != 2 || s.AllowTools[1] != "jq" || s.ToolTimeout != 5*time.Second {
		t.Fatalf("%+v", s)
	}
}

func TestLoadBadValueNamesVariable(t *testing.T) {
	t.Setenv("TACT_MAX_ITERATIONS", "many")
	if _, err := Load(); err == nil || !contains(err.Error(), "TACT_MAX_ITERATIONS") {
		t.Fatalf("err %v", err)
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

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
