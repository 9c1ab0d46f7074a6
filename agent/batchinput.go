package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQueryLine is the longest input line of a batch (1 MiB, as a query on
// standard input); a longer one is an error result for that line.
const MaxQueryLine = 1 << 20

// BatchQuery is one line of a batch's input.
type BatchQuery struct {
	ID    string // the object's "id", else the line number
	Line  int    // 1-based line in the input
	Query string
	// Params are the line's "params": the values of the batch's saved
	// plan's parameters (tact batch --plan).
	Params map[string]json.RawMessage
	// Err is set for a line that is not a query (bad JSON, no "query", an
	// unknown field, too long): the batch reports it and goes on.
	Err error
}

// ReadBatch reads a batch's queries from r, one a line: a JSON object
// {"id": ..., "query": ...} (a line starting with "{"), or plain text.
// Blank lines and lines starting with "#" are skipped. Errors name
// name:line. A read error ends the sequence with that error.
func ReadBatch(r io.Reader, name string) iter.Seq2[BatchQuery, error] {
	return func(yield func(BatchQuery, error) bool) {
		br := bufio.NewReaderSize(r, 64*1024)
		for line := 1; ; line++ {
			raw, tooLong, err := readLine(br)
			if err != nil && !errors.Is(err, io.EOF) {
				yield(BatchQuery{}, fmt.Errorf("%s:%d: %w", name, line, err))
				return
			}
			if errors.Is(err, io.EOF) && raw == nil && !tooLong {
				return
			}
			q, skip := parseBatchLine(raw, tooLong, name, line)
			if !skip && !yield(q, nil) {
				return
			}
			if errors.Is(err, io.EOF) {
				return
			}
		}
	}
}

// readLine reads one line without its newline, keeping at most
// MaxQueryLine bytes (tooLong: more were dropped). raw is nil at EOF with
// nothing read.
func readLine(br *bufio.Reader) (raw []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, e := br.ReadLine()
		if len(raw)+len(chunk) > MaxQueryLine {
			tooLong = true
		} else {
			raw = append(raw, chunk...)
		}
		if e != nil {
			if raw == nil && len(chunk) == 0 {
				return nil, tooLong, e
			}
			return raw, tooLong, e
		}
		if raw == nil {
			raw = []byte{}
		}
		if !isPrefix {
			return raw, tooLong, nil
		}
	}
}

func parseBatchLine(raw []byte, tooLong bool, name string, line int) (BatchQuery, bool) {
	q := BatchQuery{ID: strconv.Itoa(line), Line: line}
	if tooLong {
		q.Err = fmt.Errorf("%s:%d: line is longer than %d bytes", name, line, MaxQueryLine)
		return q, false
	}
	text := strings.TrimSpace(strings.TrimPrefix(string(raw), "\ufeff"))
	if text == "" || strings.HasPrefix(text, "#") {
		return q, true
	}
	if !utf8.ValidString(text) {
		q.Err = fmt.Errorf("%s:%d: not UTF-8 text", name, line)
		return q, false
	}
	if !strings.HasPrefix(text, "{") {
		q.Query = text
		return q, false
	}
	var obj struct {
		ID     json.RawMessage            `json:"id"`
		Query  *string                    `json:"query"`
		Params map[string]json.RawMessage `json:"params"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		q.Err = fmt.Errorf("%s:%d: invalid query object: %v", name, line, err)
		return q, false
	}
	if dec.More() {
		q.Err = fmt.Errorf("%s:%d: invalid query object: text after the object", name, line)
		return q, false
	}
	if id, err := batchID(obj.ID); err != nil {
		q.Err = fmt.Errorf("%s:%d: %v", name, line, err)
		return q, false
	} else if id != "" {
		q.ID = id
	}
	q.Params = obj.Params
	if obj.Query == nil || strings.TrimSpace(*obj.Query) == "" {
		if obj.Params != nil {
			// A line of a batch over a saved plan: the plan's query.
			return q, false
		}
		q.Err = fmt.Errorf(`%s:%d: the object has no "query"`, name, line)
		return q, false
	}
	q.Query = strings.TrimSpace(*obj.Query)
	return q, false
}

// batchID accepts a string or a number as an id ("" when absent).
func batchID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&n) == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf(`"id" must be a string or a number, not %s`, raw)
}
