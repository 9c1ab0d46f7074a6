package prose

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const docSegment = `You have access to the following tools:
- code_search(query="search terms") - Search for code matching the query
- read_file(path="file/path") - Read the contents of a specific file
- write_file(path="file/path", content="new content") - Write content to a file

Format: Action: tool_name(param="value")`

func TestParseSignatures(t *testing.T) {
	got := ParseSignatures(docSegment)
	want := Signatures{"code_search": {"query"}, "read_file": {"path"}, "write_file": {"path", "content"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := ParseSignatures("You have access to: code_search(query), read_file(path)"); !reflect.DeepEqual(got, Signatures{"code_search": {"query"}, "read_file": {"path"}}) {
		t.Fatalf("short form: %v", got)
	}
}

func TestParseProse(t *testing.T) {
	sigs := ParseSignatures(docSegment)
	for _, tc := range []struct {
		name, reply          string
		thought, tool, args  string
		raw, answer, errPart string
	}{
		{name: "document form", reply: "Thought: I need to search for authentication code.\nAction: code_search(query=\"authentication login\")",
			thought: "I need to search for authentication code.", tool: "code_search", args: `{"query":"authentication login"}`,
			raw: `Action: code_search(query="authentication login")`},
		{name: "markdown, fences, single quotes", reply: "**Thought:** write it\n```\n**Action:** write_file(path='a.txt', content='hi')\n```",
			thought: "write it", tool: "write_file", args: `{"path":"a.txt","content":"hi"}`},
		{name: "junk after a value", reply: "Action: write_file(path='a.txt', content='it''s')", errPart: `want "," or ")"`},
		{name: "two args, numbers, bools", reply: "Thought: x\nAction: write_file(path=\"a.txt\", content=\"line1\\nline2\")",
			thought: "x", tool: "write_file", args: `{"path":"a.txt","content":"line1\nline2"}`, raw: `Action: write_file(path="a.txt", content="line1\nline2")`},
		{name: "positional", reply: "Thought: look\nAction: read_file(\"src/auth.js\")", thought: "look", tool: "read_file", args: `{"path":"src/auth.js"}`},
		{name: "bare word", reply: "Action: code_search(auth)", tool: "code_search", args: `{"query":"auth"}`},
		{name: "json object argument", reply: "Thought: t\nAction: code_search({\"query\": \"a\"})", thought: "t", tool: "code_search", args: `{"query":"a"}`},
		{name: "action input line", reply: "Thought: t\nAction: code_search\nAction Input: {\"query\": \"login\"}", thought: "t", tool: "code_search", args: `{"query":"login"}`},
		{name: "json action", reply: `Action: {"tool": "read_file", "args": {"path": "x"}}`, tool: "read_file", args: `{"path":"x"}`},
		{name: "triple quotes span lines", reply: "Thought: t\nAction: write_file(path=\"a\", content=\"\"\"one\ntwo \"quoted\" end\"\"\")",
			thought: "t", tool: "write_file", args: `{"path":"a","content":"one\ntwo \"quoted\" end"}`},
		{name: "lenient escapes", reply: `Action: code_search(query='\d+ it\'s')`, tool: "code_search", args: `{"query":"\\d+ it's"}`},
		{name: "imagined observation ignored", reply: "Thought: t\nAction: read_file(path=\"a\")\nObservation: file says hi\nFinal Answer: hi", thought: "t", tool: "read_file", args: `{"path":"a"}`},
		{name: "final answer", reply: "Thought: I know it.\nFinal Answer: Authentication lives in auth.js.", thought: "I know it.", answer: "Authentication lives in auth.js."},
		{name: "answer first wins", reply: "Final Answer: done\nAction: read_file(path=\"a\")", answer: "done"},
		{name: "plain text is an answer", reply: "It is in auth.js.", answer: "It is in auth.js."},
		{name: "thought only is the answer", reply: "Thought: nothing to do", thought: "nothing to do", answer: "nothing to do"},
		{name: "unknown tool", reply: "Action: delete_all()", errPart: `unknown tool "delete_all" (known: code_search, read_file, write_file)`},
		{name: "unclosed paren", reply: "Action: read_file(path=\"a\"", errPart: "unclosed \"(\""},
		{name: "unclosed string", reply: "Action: read_file(path=\"a)", errPart: "unclosed \""},
		{name: "too many positional", reply: "Action: read_file(\"a\", \"b\")", errPart: "has only 1 parameters"},
		{name: "duplicate", reply: "Action: read_file(path=\"a\", path=\"b\")", errPart: "given twice"},
		{name: "no name", reply: "Action: (x)", errPart: "is not a tool name"},
		{name: "empty", reply: "  \n", errPart: "empty reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.reply, sigs)
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("err = %v, want %q (got %+v)", err, tc.errPart, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Thought != tc.thought || got.Tool != tc.tool || string(got.Args) != tc.args || got.Answer != tc.answer {
				t.Fatalf("got %+v (args %s)", got, got.Args)
			}
			if tc.raw != "" && got.Raw != tc.raw {
				t.Fatalf("raw = %q, want %q", got.Raw, tc.raw)
			}
		})
	}
	// Without signatures any tool name goes, and positional arguments
	// cannot be named.
	if got, err := Parse("Action: anything(a=1, b=true, c=None, d=[1,2])", nil); err != nil || got.Tool != "anything" || string(got.Args) != `{"a":1,"b":true,"c":null,"d":[1,2]}` {
		t.Fatalf("no signatures: %+v %v", got, err)
	}
	if _, err := Parse("Action: anything(1)", nil); err == nil || !strings.Contains(err.Error(), "names no parameters") {
		t.Fatalf("positional without signatures: %v", err)
	}
}

// FormatAction writes what Parse reads back, keys in order.
func TestFormatProseActionRoundTrip(t *testing.T) {
	for _, args := range []string{`{}`, `{"query":"a \"b\" \\ c\nd"}`, `{"b":2,"a":[1,{"x":null}],"c":false}`, `{"odd key":"v"}`, `{"u":"é ✓ \u0001"}`} {
		line := FormatAction("tool_x", json.RawMessage(args))
		got, err := Parse("Action: "+line, nil)
		if err != nil || got.Tool != "tool_x" || string(got.Args) != args {
			t.Fatalf("%s -> %s -> %+v (%s) %v", args, line, got, got.Args, err)
		}
	}
}

func FuzzParseProse(f *testing.F) {
	for _, s := range []string{
		"Thought: t\nAction: code_search(query=\"a\")",
		"Action: write_file(path='a', content=\"\"\"x\ny\"\"\")",
		"Action: read_file({\"path\": \"a\"})",
		"Action: code_search\nAction Input: {\"query\": 1}",
		`Action: {"tool": "read_file", "args": {"path": "x"}}`,
		"Final Answer: done", "**Action:** f(a=[1,2], b=True, c=-1.5e3)", "Action: f(a=\"\\ud83d\\ude00\")", "Action: f(", "",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	sigs := ParseSignatures(docSegment)
	f.Fuzz(func(t *testing.T, reply string, withSigs bool) {
		s := sigs
		if !withSigs {
			s = nil
		}
		got, err := Parse(reply, s)
		if err != nil {
			return
		}
		if got.Tool == "" {
			if got.Answer == "" {
				t.Fatalf("accepted a reply with neither action nor answer: %q", reply)
			}
			return
		}
		// An action names a tool with an object of arguments, and its
		// formatted form parses back to the same action.
		var m map[string]any
		if json.Unmarshal(got.Args, &m) != nil || m == nil {
			t.Fatalf("args %s are not an object", got.Args)
		}
		if _, ok := sigs[got.Tool]; withSigs && !ok {
			t.Fatalf("unknown tool %q accepted", got.Tool)
		}
		back, err := Parse("Action: "+FormatAction(got.Tool, got.Args), nil)
		if err != nil || back.Tool != got.Tool || string(back.Args) != string(got.Args) {
			t.Fatalf("round trip of %s %s: %+v %v", got.Tool, got.Args, back, err)
		}
	})
}
