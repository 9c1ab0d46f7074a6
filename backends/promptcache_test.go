package backends

import (
	"path/filepath"
	"testing"

	"github.com/tactcli/tact/config"
)

// --no-prompt-cache (TACT_NO_PROMPT_CACHE) and a zero --prompt-cache-max
// turn the llama backend's prompt cache off; otherwise it lives in
// $XDG_CACHE_HOME/tact/kv.
func TestPromptCacheDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	for _, c := range []struct {
		name string
		mod  func(*config.Settings)
		want string
	}{
		{"default", func(*config.Settings) {}, filepath.Join("/cache", "tact", "kv")},
		{"--no-prompt-cache", func(s *config.Settings) { s.NoPromptCache = true }, ""},
		{"--prompt-cache-max 0", func(s *config.Settings) { s.PromptCacheMax = 0 }, ""},
	} {
		s := config.Defaults()
		c.mod(s)
		if got := promptCacheDir(s); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
