package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Big values are stored once. A 1 MB write_file reaches a run's record in
// its plan, the step's arguments, three trace events (plan, action, step),
// the result and the checkpoint: about seven copies. The writer replaces
// every JSON string literal of BlobMin bytes or more in those texts with a
// reference to a row of blobs (one per distinct literal and run), and the
// readers put the literal back, so callers see the texts as recorded.
//
// A reference is the JSON string "\u0000tact-blob:" followed by the
// literal's SHA-256 in hex. Any literal of the original that starts like
// one is itself moved to a blob, so every reference in a stored text is one
// the writer made. Only valid JSON is scanned (there a quote followed by
// \u0000 only starts a string); a text that is not JSON and holds the
// prefix is stored whole as a blob.

// BlobMin is the length of a JSON string literal (quotes and escapes
// included) from which it is stored once, as a blob.
const BlobMin = 4 << 10

// blobPrefix starts every reference, as it stands in JSON text.
const blobPrefix = `"\u0000tact-blob:`

// blobRefLen is a reference's length: the prefix, 64 hex digits, a quote.
const blobRefLen = len(blobPrefix) + 64 + 1

// blob is one literal moved out of a text.
type blob struct{ hash, data string }

// squeeze replaces text's big string literals with references and returns
// them as blobs (duplicates once).
func squeeze(text string) (string, []blob) {
	if len(text) < BlobMin && !strings.Contains(text, blobPrefix) {
		return text, nil
	}
	if !json.Valid([]byte(text)) {
		if !strings.Contains(text, blobPrefix) {
			return text, nil
		}
		b := newBlob(text)
		return ref(b.hash), []blob{b}
	}
	var (
		out   strings.Builder
		blobs []blob
		seen  map[string]bool
		last  int // text[last:] is not yet copied
	)
	for i := 0; i < len(text); i++ {
		if text[i] != '"' {
			continue
		}
		end := stringEnd(text, i)
		lit := text[i:end]
		if len(lit) >= BlobMin || strings.HasPrefix(lit, blobPrefix) {
			b := newBlob(lit)
			if seen == nil {
				seen = map[string]bool{}
				out.Grow(len(text) / 4)
			}
			if !seen[b.hash] {
				seen[b.hash] = true
				blobs = append(blobs, b)
			}
			out.WriteString(text[last:i])
			out.WriteString(ref(b.hash))
			last = end
		}
		i = end - 1
	}
	if blobs == nil {
		return text, nil
	}
	out.WriteString(text[last:])
	return out.String(), blobs
}

// stringEnd is the index just past the string literal that starts with the
// quote at text[i] (len(text) when it does not end).
func stringEnd(text string, i int) int {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(text)
}

func newBlob(data string) blob {
	sum := sha256.Sum256([]byte(data))
	return blob{hash: hex.EncodeToString(sum[:]), data: data}
}

func ref(hash string) string { return blobPrefix + hash + `"` }

// hasRefs reports whether text holds a reference (the readers' fast path).
func hasRefs(text string) bool { return strings.Contains(text, blobPrefix) }

// refAt reports whether a whole reference starts at text[i] and returns
// its hash.
func refAt(text string, i int) (string, bool) {
	if len(text)-i < blobRefLen || !strings.HasPrefix(text[i:], blobPrefix) || text[i+blobRefLen-1] != '"' {
		return "", false
	}
	h := text[i+len(blobPrefix) : i+blobRefLen-1]
	for _, c := range []byte(h) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return h, true
}

// expand puts the blobs back into text; get looks one up by hash ("",
// false: not stored, as when the run was pruned meanwhile: the reference
// stays).
func expand(text string, get func(hash string) (string, bool)) string {
	if !hasRefs(text) {
		return text
	}
	var out strings.Builder
	last := 0
	for i := strings.Index(text, blobPrefix); i >= 0; {
		if h, ok := refAt(text, i); ok {
			if data, ok := get(h); ok {
				out.WriteString(text[last:i])
				out.WriteString(data)
				last = i + blobRefLen
				i += blobRefLen - 1
			}
		}
		next := strings.Index(text[i+1:], blobPrefix)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	if last == 0 {
		return text
	}
	out.WriteString(text[last:])
	return out.String()
}

// expandText is expand over the store's blobs; a blob that cannot be read
// leaves its reference.
func (s *Store) expandText(ctx context.Context, text string) string {
	return expand(text, func(hash string) (string, bool) {
		var data string
		if err := s.db.QueryRowContext(ctx, "SELECT data FROM blobs WHERE hash = ? LIMIT 1", hash).Scan(&data); err != nil {
			return "", false
		}
		return data, true
	})
}

const sqlInsertBlob = `INSERT INTO blobs (hash, run, data) SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM runs WHERE seq = ?2)
ON CONFLICT (hash, run) DO NOTHING`

// squeezeFor squeezes text for run seq within the writer's transaction,
// storing its new blobs, and returns the text to store and the bytes the
// new blobs took.
func (w *writeState) squeezeFor(ctx context.Context, seq int64, text string) (string, int64, error) {
	text, blobs := squeeze(text)
	n, err := w.storeBlobs(ctx, seq, blobs)
	return text, n, err
}

// squeezeExisting replaces only the big literals the run has stored as
// blobs already, making none: a checkpoint is replaced at every step and
// emptied when the run succeeds, so blobs of its own (the task message
// quoting a plan, a reply quoting its call) would outlive it unreferenced.
func (w *writeState) squeezeExisting(ctx context.Context, seq int64, text string) (string, error) {
	squeezed, blobs := squeeze(text)
	if len(blobs) == 0 {
		return text, nil
	}
	st, err := w.stmt(ctx, "SELECT 1 FROM blobs WHERE hash = ? AND run = ?")
	if err != nil {
		return "", err
	}
	inline := map[string]string{}
	for _, b := range blobs {
		var one int
		if err := st.QueryRowContext(ctx, b.hash, seq).Scan(&one); err != nil {
			inline[b.hash] = b.data
		}
	}
	if len(inline) == 0 {
		return squeezed, nil
	}
	// Put back what is not stored; a literal that looks like a reference
	// (the only kind squeeze moves whatever its length) must not stay
	// inline, so the text is then kept whole as it came.
	for _, data := range inline {
		if strings.HasPrefix(data, blobPrefix) {
			return text, nil
		}
	}
	return expand(squeezed, func(h string) (string, bool) { d, ok := inline[h]; return d, ok }), nil
}

func (w *writeState) storeBlobs(ctx context.Context, seq int64, blobs []blob) (int64, error) {
	var added int64
	for _, b := range blobs {
		res, err := w.exec(ctx, sqlInsertBlob, b.hash, seq, b.data)
		if err != nil {
			return added, err
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			added += int64(len(b.data))
		}
	}
	return added, nil
}
