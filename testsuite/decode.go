package testsuite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/tactcli/tact/internal/text"
)

// A case line is decoded by hand over encoding/json's tokens rather than by
// json.Unmarshal with DisallowUnknownFields: that one says `unknown field
// "jqq"` with no path, takes the last of two equal keys silently and lets
// null through as "unset". Here every error names the field path
// ("assert[1].jq: want a string, got number"), a duplicate key is an
// error, and null is accepted only where a field is optional by type
// (a pointer or raw JSON).

// pathError is a decoding error at a field path.
type pathError struct {
	Path string
	Msg  string
}

func (e *pathError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func errAt(path, format string, args ...any) error {
	return &pathError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// member is one key of a JSON object, in order.
type member struct {
	Key string
	Val json.RawMessage
}

// members splits raw (one JSON object) into its members; a duplicate key is
// an error.
func members(raw json.RawMessage, path string) ([]member, error) {
	if text.JSONKind(raw) != "object" {
		return nil, errAt(path, "want an object, got %s", text.JSONKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, errAt(path, "%v", err)
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errAt(path, "%v", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errAt(join(path, key), "%v", err)
		}
		if seen[key] {
			return nil, errAt(join(path, key), "given twice")
		}
		seen[key] = true
		out = append(out, member{key, v})
	}
	return out, nil
}

// elements splits raw (one JSON array) into its elements.
func elements(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	if text.JSONKind(raw) != "array" {
		return nil, errAt(path, "want an array, got %s", text.JSONKind(raw))
	}
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, errAt(path, "%v", err)
	}
	return out, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var rawType = reflect.TypeFor[json.RawMessage]()
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decode decodes raw into dst (a pointer) strictly: structs by their json
// tags with unknown and duplicate keys refused, slices element by element,
// everything else by encoding/json with its type checked first.
func decode(raw json.RawMessage, path string, dst any) error {
	return decodeValue(raw, path, reflect.ValueOf(dst).Elem())
}

func decodeValue(raw json.RawMessage, path string, v reflect.Value) error {
	t := v.Type()
	k := text.JSONKind(raw)
	switch {
	case t == rawType:
		v.SetBytes(bytes.Clone(bytes.TrimSpace(raw)))
		return nil
	case t.Kind() == reflect.Pointer:
		if k == "null" {
			return nil
		}
		p := reflect.New(t.Elem())
		if err := decodeValue(raw, path, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.PointerTo(t).Implements(unmarshalerType):
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			return errAt(path, "%s", describe(err))
		}
		return nil
	case t.Kind() == reflect.Struct:
		return decodeStruct(raw, path, v)
	case t.Kind() == reflect.Slice:
		els, err := elements(raw, path)
		if err != nil {
			return err
		}
		s := reflect.MakeSlice(t, len(els), len(els))
		for i, el := range els {
			if err := decodeValue(el, fmt.Sprintf("%s[%d]", path, i), s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case t.Kind() == reflect.Map:
		ms, err := members(raw, path)
		if err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(t, len(ms))
		for _, mb := range ms {
			e := reflect.New(t.Elem()).Elem()
			if err := decodeValue(mb.Val, join(path, mb.Key), e); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(mb.Key), e)
		}
		v.Set(m)
		return nil
	}
	if want := jsonKind(t); want != k {
		return errAt(path, "want %s, got %s", article(want), k)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v.Addr().Interface()); err != nil {
		return errAt(path, "%s", describe(err))
	}
	return nil
}

// decodeStruct decodes a JSON object into a struct by the fields' json
// tags; a key no field has is an error.
func decodeStruct(raw json.RawMessage, path string, v reflect.Value) error {
	ms, err := members(raw, path)
	if err != nil {
		return err
	}
	t := v.Type()
	for _, m := range ms {
		i := fieldIndex(t, m.Key)
		if i < 0 {
			return errAt(join(path, m.Key), "unknown field (known: %s)", strings.Join(fieldNames(t), ", "))
		}
		if err := decodeValue(m.Val, join(path, m.Key), v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

func fieldIndex(t reflect.Type, key string) int {
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key && name != "-" {
			return i
		}
	}
	return -1
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// jsonKind is the JSON type a Go leaf type takes.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.Kind().String()
}

func article(k string) string {
	if k == "object" || k == "array" {
		return "an " + k
	}
	return "a " + k
}

// describe makes encoding/json's errors say what the user wrote, without
// Go type names.
func describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return "want a whole number in range, got " + strconv.Quote(te.Value)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return "want a whole number from 0, got " + strconv.Quote(te.Value)
		}
		return fmt.Sprintf("want %s, got %s", article(jsonKind(te.Type)), te.Value)
	}
	if errors.Is(err, io.EOF) {
		return "no value"
	}
	var pe *pathError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return err.Error()
}
