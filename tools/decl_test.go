package tools

import (
	"encoding/json"
	"testing"
)

// Every built-in tool declares its arguments, and every argument a
// declaration names is one its schema has: policy, hooks and mcp serve
// read these, so a misspelt name would silently leave a path unchecked.
func TestBuiltinsDeclare(t *testing.T) {
	for _, tool := range Builtins() {
		if _, ok := tool.(Declarer); !ok {
			t.Errorf("%s does not declare its arguments (tools.Declarer)", tool.Name())
			continue
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tool.Schema(), &s); err != nil {
			t.Fatalf("%s: schema: %v", tool.Name(), err)
		}
		d := DeclOf(tool)
		args := append([]string{d.Command, d.WorkDir, d.Content, d.Old, d.New}, d.Paths...)
		for _, a := range args {
			if _, ok := s.Properties[a]; a != "" && !ok {
				t.Errorf("%s declares argument %q, which its schema does not have", tool.Name(), a)
			}
		}
		if d.FilePath && len(d.Paths) == 0 {
			t.Errorf("%s: FilePath without a path argument", tool.Name())
		}
		if (d.Old == "") != (d.New == "") {
			t.Errorf("%s: Old and New go together", tool.Name())
		}
		if tool.Class() == ClassRead && (d.Command != "" || d.Content != "" || d.Old != "") {
			t.Errorf("%s is a read tool but declares a command or a change", tool.Name())
		}
		if d.WorkDir != "" && d.Command == "" {
			t.Errorf("%s: WorkDir without Command", tool.Name())
		}
		if got, ok := BuiltinDecl(tool.Name()); !ok || len(got.Paths) != len(d.Paths) || got.Command != d.Command {
			t.Errorf("BuiltinDecl(%s) = %+v, %v; want %+v", tool.Name(), got, ok, d)
		}
	}
	if _, ok := BuiltinDecl("srv.read_file"); ok {
		t.Errorf("BuiltinDecl found an MCP tool")
	}
}
