package history

import "strings"

// ftsMatch turns user text into an FTS5 query that matches its words
// literally: every whitespace-separated word becomes a quoted string (inner
// quotes doubled), so FTS5 syntax in it (AND, OR, NOT, NEAR, *, ^, -, :,
// parentheses, column filters) is just text, and the words are ANDed. A word
// with no letters or digits (say "*") tokenizes to nothing and FTS5 ignores
// it beside other words. ok is false when the text has no words.
func ftsMatch(text string) (query string, ok bool) {
	words := strings.Fields(text)
	if len(words) == 0 {
		return "", false
	}
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(w, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String(), true
}
