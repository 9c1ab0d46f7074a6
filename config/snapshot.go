package config

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Snapshot is the values of the named fields as a JSON object keyed by
// field name (a run history record keeps the settings a resumed run
// reuses). Unknown names are left out.
func (s *Settings) Snapshot(fields []string) json.RawMessage {
	v := reflect.ValueOf(s).Elem()
	out := make(map[string]any, len(fields))
	for _, name := range fields {
		if f := v.FieldByName(name); f.IsValid() {
			out[name] = f.Interface()
		}
	}
	b, _ := json.Marshal(out) // settings are plain values
	return b
}

// Restore sets the fields a Snapshot holds, except those keep says to
// keep (a flag given on the command line), and only fields named in
// allowed. A field that does not decode is an error naming it; fields the
// snapshot has but Settings no longer has are ignored.
func (s *Settings) Restore(snapshot []byte, allowed []string, keep func(field string) bool) error {
	if len(snapshot) == 0 {
		return nil
	}
	var saved map[string]json.RawMessage
	if err := json.Unmarshal(snapshot, &saved); err != nil {
		return fmt.Errorf("recorded settings: %w", err)
	}
	v := reflect.ValueOf(s).Elem()
	for _, name := range allowed {
		raw, ok := saved[name]
		f := v.FieldByName(name)
		if !ok || !f.IsValid() || (keep != nil && keep(name)) {
			continue
		}
		p := reflect.New(f.Type())
		if err := json.Unmarshal(raw, p.Interface()); err != nil {
			return fmt.Errorf("recorded setting %s: %w", name, err)
		}
		f.Set(p.Elem())
	}
	return nil
}
