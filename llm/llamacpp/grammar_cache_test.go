package llamacpp

import (
	"fmt"
	"testing"
)

// Distinct schemas (tact serve's clients send their own) keep at most
// maxGrammars parsed grammars, the least recently used dropped first.
func TestGrammarCacheBounded(t *testing.T) {
	b := newTiny(t, nil)
	b.mu.Lock()
	defer b.mu.Unlock()
	schema := func(i int) []byte {
		return fmt.Appendf(nil, `{"type":"object","properties":{"f%d":{"type":"string"}},"required":["f%d"]}`, i, i)
	}
	for i := range maxGrammars {
		if _, err := b.grammar(schema(i)); err != nil {
			t.Fatal(err)
		}
	}
	b.grammar(schema(0)) // used again: now the most recent
	if _, err := b.grammar(schema(maxGrammars)); err != nil {
		t.Fatal(err)
	}
	if n := len(b.grammars); n != maxGrammars {
		t.Errorf("%d grammars kept, want %d", n, maxGrammars)
	}
	if _, ok := b.grammars[string(schema(0))]; !ok {
		t.Error("the grammar used last was dropped")
	}
	if _, ok := b.grammars[string(schema(1))]; ok {
		t.Error("the least recently used grammar was kept")
	}
}
