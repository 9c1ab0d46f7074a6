package mcp

import (
	"os"
	"testing"
)

// With none of the inherited variables set, a server still gets an empty
// environment, not tact's whole one (os/exec's meaning of a nil Env).
func TestChildEnvEmptyIsNotNil(t *testing.T) {
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			t.Setenv(k, v) // restored after the test
			os.Unsetenv(k)
		}
	}
	t.Setenv("SOME_API_KEY", "secret")
	env := childEnv(nil)
	if env == nil || len(env) != 0 {
		t.Fatalf("childEnv(nil) = %#v, want an empty, non-nil environment", env)
	}
}
