package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Decoding a schema as ordered JSON, and number helpers; the ordered object
// itself is written out in normalize_emit.go.

// decodeOrdered decodes one JSON value (objects as *object, numbers as
// json.Number), refusing nesting deeper than maxDepth; objects counts the
// objects in it. A key given twice keeps its first place and last value,
// as encoding/json (and so the validator) reads it.
func decodeOrdered(data []byte, maxDepth int) (v any, objects int, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var read func(depth int) (any, error)
	read = func(depth int) (any, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return tok, nil
		}
		if depth >= maxDepth {
			return nil, fmt.Errorf("nests deeper than %d levels", maxDepth)
		}
		switch d {
		case '{':
			objects++
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := read(depth + 1)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := read(depth + 1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", d)
	}
	v, err = read(0)
	if err != nil {
		return nil, 0, fmt.Errorf("schema: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, 0, errors.New("schema: invalid JSON: trailing data after the first value")
	}
	return v, objects, nil
}

func intOf(v any) (int64, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := num.Int64(); err == nil {
		return i, true
	}
	f, err := num.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

func floatOf(v any) (float64, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := num.Float64()
	return f, err == nil && !math.IsInf(f, 0)
}
