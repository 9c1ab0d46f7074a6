//go:build cgollama

package llamacpp

// The binding's own converter (llama.cpp's json-schema-to-grammar.cpp),
// kept only as the reference of grammar_diff_test.go while the cgo
// binding exists; tact builds its grammars with package grammar.

/*
#include <stdlib.h>

int schema_to_grammar(const char * json_schema, char * grammar, size_t max_len);
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/tactcli/tact/schema"
)

// bindingGBNF converts through schema.Normalize with llama.cpp's
// converter, growing the buffer until the grammar fits (the binding's
// SchemaToGrammar cuts at 1 MiB).
func bindingGBNF(raw []byte) (string, error) {
	n, err := schema.Normalize(raw)
	if err != nil {
		return "", err
	}
	return bindingConvert(n.Schema)
}

// bindingConvert is llama.cpp's converter on a schema as it is.
func bindingConvert(sch []byte) (string, error) {
	cs := C.CString(string(sch))
	defer C.free(unsafe.Pointer(cs))
	const maxGBNF = 64 << 20
	size := max(32<<10, 4*len(sch))
	for {
		buf := (*C.char)(C.malloc(C.size_t(size)))
		got := int(C.schema_to_grammar(cs, buf, C.size_t(size)))
		var gbnf string
		if got > 0 && got < size-1 {
			gbnf = C.GoStringN(buf, C.int(got))
		}
		C.free(unsafe.Pointer(buf))
		switch {
		case got == 0:
			return "", errors.New("llama.cpp's converter refused the schema")
		case gbnf != "":
			return gbnf, nil
		case size >= maxGBNF:
			return "", fmt.Errorf("the grammar would take over %d MiB", maxGBNF>>20)
		}
		size = min(size*4, maxGBNF)
	}
}
