// Package jqxtest holds the jq filter shapes whose syntax trees grow deep,
// shared by the tests of every package that parses filters from outside.
package jqxtest

import "strings"

// Shape makes a filter n levels deep (or n links long) of one kind.
type Shape struct {
	Name string
	Make func(n int) string
}

// Shapes is every way found to make gojq's syntax tree deep: nesting
// brackets and keywords, and chains of operators and suffixes, which nest
// just as deep in the tree (each link is one level of gojq's recursion).
var Shapes = []Shape{
	{"parentheses", wrap("(", ".", ")")},
	{"brackets", wrap("[", "", "]")},
	{"braces", wrap("{a:", "1", "}")},
	{"object keys", wrap("{(", `"a"`, "):1}")},
	{"interpolation", wrap(`"\(`, "1", `)"`)},
	{"format interpolation", wrap(`@base64 "\(`, "1", `)"`)},
	{"if", wrap("if . then ", ".", " else . end")},
	{"try", wrap("try ", ".", "")},
	{"try catch", wrap("try (", ".", ") catch .")},
	{"reduce", wrap("reduce . as $x (.; ", ".", ")")},
	{"foreach", wrap("foreach . as $x (.; ", ".", ")")},
	{"def", func(n int) string { return strings.Repeat("def f: ", n) + "." + strings.Repeat("; f", n) }},
	{"defs", func(n int) string { return strings.Repeat("def f: .; ", n) + "f" }},
	{"function arguments", func(n int) string { return "def f(g): g; " + wrap("f(", ".", ")")(n) }},
	{"builtin arguments", wrap("select(", ".", ")")},
	{"unary minus", wrap("-", "1", "")},
	{"unary minus parenthesized", wrap("-(", "1", ")")},
	{"index nesting", wrap(".[", "0", "]")},
	{"slice nesting", wrap(".[", "0", ":]")},
	{"update nesting", wrap(".a|=(", ".", ")")},
	{"alternative update nesting", wrap(".a//=(", ".", ")")},
	{"optional parenthesized", wrap("(", ".", ")?")},
	{"array pattern", func(n int) string { return ". as " + wrap("[", "$a", "]")(n) + "|." }},
	{"object pattern", func(n int) string { return ". as " + wrap("{a:", "$a", "}")(n) + "|." }},
	{"pipe chain", chain(".a", "|.a")},
	{"plus chain", chain("1", "+1")},
	{"comma chain", chain("1", ",1")},
	{"alternative chain", chain(".a", "//.a")},
	{"and chain", chain("true", " and true")},
	{"as chain", func(n int) string { return strings.Repeat(". as $x|", n) + "$x" }},
	{"destructuring alternatives", func(n int) string { return strings.Repeat(". as [$a] ?// $a|", n) + "." }},
	{"label chain", func(n int) string { return strings.Repeat("label $a|", n) + "." }},
	{"optional chain", chain(".a", "?")},
	{"field chain", chain("", ".a")},
	{"index chain", chain(".", "[0]")},
	{"recurse chain", chain("..", "|..")},
}

// wrap nests open ... close n times around mid.
func wrap(open, mid, close string) func(int) string {
	return func(n int) string { return strings.Repeat(open, n) + mid + strings.Repeat(close, n) }
}

// chain is head followed by n links.
func chain(head, link string) func(int) string {
	return func(n int) string { return head + strings.Repeat(link, n) }
}

// OfLength makes the shape as deep as fits in size bytes, padded with
// spaces to exactly size bytes.
func (s Shape) OfLength(size int) string {
	base := len(s.Make(0))
	per := len(s.Make(1)) - base
	e := s.Make((size - base) / per)
	return e + strings.Repeat(" ", size-len(e))
}
