package history

import "strings"

// ftsMatch turns user text into an FTS5 query that matches its words
// literally: every whitespace-separated word becomes a quoted string (inner
// quotes doubled), so FTS5 syntax in it (AND, OR, NOT, NEAR, *, ^, -, :,
// parentheses, column filters) is just text, and the words are ANDed. A word
// with no letters or digits (say "*") tokenizes to nothing and FTS5 ignores
// it beside other words. ok is false when the text has no words.
func ftsMatch(text string) (query string, ok bool) {
	// SQLite reads the query as a C string: a NUL would end it inside a
	// quoted word (FuzzListQuery found it). It separates words here.
	words := strings.Fields(strings.ReplaceAll(text, "\x00", " "))
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
