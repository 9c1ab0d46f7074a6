package agent

import (
	"strings"
	"testing"

	"github.com/tactcli/tact/config"
)

// Regression: --stop-when was compiled in tact's own process, unbounded
// (200,000 parentheses cost 590 MB, 500,000 "[" a stack overflow). It is
// now refused over the size limit with one line, and a long expression
// under it (compiled in a child process) is accepted.
func TestStopWhenBounded(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{strings.Repeat("(", 200_000) + "." + strings.Repeat(")", 200_000), "--stop-when: filter is 400001 bytes, over the 32768-byte limit"},
		{strings.Repeat("[", 500_000), "--stop-when: filter is 500000 bytes, over the 32768-byte limit"},
		{strings.Repeat(".a|", 3000) + "$state | .x", ""},
		{strings.Repeat(".a|", 3000) + "nosuch", "--stop-when: function not defined: nosuch/0"},
	} {
		s := config.Defaults()
		s.StopWhen = tc.expr
		err := validate(s)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Fatalf("%.40s...: got %v, want %q", tc.expr, err, tc.want)
		}
	}
}
