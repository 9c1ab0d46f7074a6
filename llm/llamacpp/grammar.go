package llamacpp

// The binding's SchemaToGrammar converts into a buffer of at most 1 MiB and
// silently cuts a longer grammar; tact calls the same converter with a
// buffer that grows until the grammar fits.

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

// maxGBNF bounds a grammar's text (normalized schemas are bounded, so
// only a schema of many tools comes near).
const maxGBNF = 64 << 20

// schemaGBNF converts a JSON Schema to a GBNF grammar, through its
// normalized copy (schema.Normalize): every schema the validator accepts
// yields a grammar, which may allow more than the schema (the caller
// validates replies against the schema itself).
func schemaGBNF(raw []byte) (string, error) {
	n, err := schema.Normalize(raw)
	if err != nil {
		return "", err
	}
	cs := C.CString(string(n.Schema))
	defer C.free(unsafe.Pointer(cs))
	size := max(32<<10, 4*len(n.Schema))
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
			return "", errors.New("llama.cpp's converter refused the normalized schema")
		case gbnf != "":
			return gbnf, nil
		case size >= maxGBNF:
			return "", fmt.Errorf("the grammar would take over %d MiB", maxGBNF>>20)
		}
		size = min(size*4, maxGBNF)
	}
}
