package text

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHelpers(t *testing.T) {
	if FirstLine("a\nb") != "a" || FirstLine("ab") != "ab" || FirstLine("") != "" {
		t.Error("FirstLine")
	}
	if got := Indent("a\n\nb", "  "); got != "  a\n\n  b" {
		t.Errorf("Indent %q", got)
	}
	for n, want := range map[int64]string{0: "0B", 999: "999B", 1500: "1.5KB", 248_000_000: "248MB", 4_100_000_000: "4.1GB"} {
		if got := DecimalSize(n); got != want {
			t.Errorf("DecimalSize(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[uint64]string{10: "10 bytes", 2048: "2 KiB", 262 << 20: "262 MiB", 10 << 30: "10.0 GiB"} {
		if got := BinarySize(n); got != want {
			t.Errorf("BinarySize(%d) = %q, want %q", n, got, want)
		}
	}
	s := "aé€" // 1 + 2 + 3 bytes
	for i, want := range []int{0, 1, 1, 3, 3, 3, 6} {
		if got := RuneStart(s, i); got != want {
			t.Errorf("RuneStart(%d) = %d, want %d", i, got, want)
		}
	}
	if RuneStart("\x80\x80\x80\x80\x80", 4) != 4 || RuneStart("ab", 99) != 2 || RuneStart("ab", -1) != 0 {
		t.Error("RuneStart edges")
	}
}

func TestClipArgs(t *testing.T) {
	big := strings.Repeat("x", 1_000_000)
	for _, tt := range []struct {
		in   string
		want string
	}{
		{`{"path":"a.txt"}`, `{"path":"a.txt"}`},
		{`{"b":1,"a":[1, 2],"c":null}`, `{"a":[1,2],"b":1,"c":null}`},
		{`{"path":"f","content":"` + big + `"}`, `{"content":"` + strings.Repeat("x", 9) + `… (1.0MB)","path":"f"}`},
		{`{"n":{"deep":["` + strings.Repeat("é", 300) + `"]}}`, `{"n":{"deep":["` + strings.Repeat("é", 9) + `… (600B)"]}}`},
		{`{"n":12345678901234567890}`, `{"n":12345678901234567890}`},
		{`not json at all, rather long`, `not json …`},
	} {
		if got := ClipArgs(json.RawMessage(tt.in), 10); got != tt.want {
			t.Errorf("ClipArgs(%.40q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Many values: the whole listing stays bounded.
	many := `[` + strings.Repeat(`"abcdefghijkl",`, 10000) + `"z"]`
	if got := ClipArgs(json.RawMessage(many), 10); utf8.RuneCountInString(got) > 80 {
		t.Errorf("%d runes for 10001 values", utf8.RuneCountInString(got))
	}
}

func TestJSONKind(t *testing.T) {
	for raw, want := range map[string]string{"": "nothing", " {}": "object", "[1]": "array", `"s"`: "string", "true": "boolean", "false": "boolean", "null": "null", "-1.5": "number"} {
		if got := JSONKind([]byte(raw)); got != want {
			t.Errorf("JSONKind(%q) = %q, want %q", raw, got, want)
		}
	}
}
