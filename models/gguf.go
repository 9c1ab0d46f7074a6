package models

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/ollama/ollama/fs/ggml"
)

// GGUF value types (gguf_type in ggml).
const (
	ggufUint8 uint32 = iota
	ggufInt8
	ggufUint16
	ggufInt16
	ggufUint32
	ggufInt32
	ggufFloat32
	ggufBool
	ggufString
	ggufArray
	ggufUint64
	ggufInt64
	ggufFloat64
	ggufTypeCount
)

// Fixed-size value widths; string and array are variable.
var ggufWidth = [ggufTypeCount]uint64{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

const (
	ggmlMaxDims     = 4  // GGML_MAX_DIMS: llama.cpp refuses more
	ggmlTypeCount   = 40 // GGML_TYPE_COUNT in the vendored ggml
	maxKeyLen       = 1 << 16
	defaultAlign    = 32
	minKVBytes      = 8 + 4      // key length + value type (empty key, no value)
	minTensorBytes  = 8 + 4 + 12 // name length + n_dims + type + offset
	headerFixedSize = 4 + 4 + 8 + 8
)

// ggufReader reads little-endian GGUF fields and refuses any length or count
// that cannot fit in the rest of the file, so nothing it reads can make it
// (or ggml.Decode afterwards) allocate more than the file holds.
type ggufReader struct {
	r    *bufio.Reader
	pos  uint64
	size uint64
	buf  [8]byte
}

var errTruncated = errors.New("file is truncated")

func (g *ggufReader) remaining() uint64 { return g.size - g.pos }

func (g *ggufReader) read(n int) ([]byte, error) {
	if uint64(n) > g.remaining() {
		return nil, errTruncated
	}
	if _, err := io.ReadFull(g.r, g.buf[:n]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errTruncated
		}
		return nil, err
	}
	g.pos += uint64(n)
	return g.buf[:n], nil
}

func (g *ggufReader) u32() (uint32, error) {
	b, err := g.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (g *ggufReader) u64() (uint64, error) {
	b, err := g.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (g *ggufReader) skip(n uint64) error {
	if n > g.remaining() {
		return errTruncated
	}
	for n > 0 {
		step := min(n, 1<<30)
		d, err := g.r.Discard(int(step))
		g.pos += uint64(d)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errTruncated
			}
			return err
		}
		n -= step
	}
	return nil
}

// str reads a GGUF string; it keeps the bytes only when keep is true.
func (g *ggufReader) str(maxLen uint64, keep bool) (string, error) {
	n, err := g.u64()
	if err != nil {
		return "", err
	}
	if n > g.remaining() || n > maxLen {
		return "", fmt.Errorf("string length %d at byte %d is out of bounds", n, g.pos-8)
	}
	if !keep {
		return "", g.skip(n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(g.r, b); err != nil {
		return "", errTruncated
	}
	g.pos += n
	return string(b), nil
}

// value skips one value of type t, checking array bounds.
func (g *ggufReader) value(t uint32, key string) (uint64, error) {
	switch {
	case t >= ggufTypeCount:
		return 0, fmt.Errorf("key %q has invalid type %d", key, t)
	case t == ggufString:
		_, err := g.str(g.remaining(), false)
		return 0, err
	case t == ggufArray:
		et, err := g.u32()
		if err != nil {
			return 0, err
		}
		n, err := g.u64()
		if err != nil {
			return 0, err
		}
		if et >= ggufTypeCount || et == ggufArray {
			return 0, fmt.Errorf("key %q has invalid array element type %d", key, et)
		}
		if et == ggufString {
			if n > g.remaining()/8 {
				return 0, fmt.Errorf("key %q: array of %d strings does not fit in the file", key, n)
			}
			for range n {
				if _, err := g.str(g.remaining(), false); err != nil {
					return 0, err
				}
			}
			return 0, nil
		}
		w := ggufWidth[et]
		if n > g.remaining()/w {
			return 0, fmt.Errorf("key %q: array of %d values does not fit in the file", key, n)
		}
		return 0, g.skip(n * w)
	default:
		b, err := g.read(int(ggufWidth[t]))
		if err != nil {
			return 0, err
		}
		var v uint64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v, nil
	}
}

// validate walks the GGUF header of a file of the given size and checks
// every length, count, type and tensor extent against it.
func validate(r io.Reader, size int64) error {
	if size < headerFixedSize {
		if size >= 4 {
			var magic [4]byte
			if _, err := io.ReadFull(r, magic[:]); err == nil && string(magic[:]) != "GGUF" {
				return errors.New("not a GGUF file (bad magic)")
			}
		}
		return errors.New("not a GGUF file (too short)")
	}
	g := &ggufReader{r: bufio.NewReaderSize(r, 64<<10), size: uint64(size)}
	magic, err := g.read(4)
	if err != nil {
		return err
	}
	if string(magic) != "GGUF" {
		return errors.New("not a GGUF file (bad magic)")
	}
	version, err := g.u32()
	if err != nil {
		return err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return errors.New("GGUF version 1 is no longer supported")
	case bits.ReverseBytes32(version) == 2 || bits.ReverseBytes32(version) == 3:
		return errors.New("big-endian GGUF is not supported")
	default:
		return fmt.Errorf("unsupported GGUF version %d", version)
	}
	nTensors, err := g.u64()
	if err != nil {
		return err
	}
	nKV, err := g.u64()
	if err != nil {
		return err
	}
	if nKV > g.remaining()/minKVBytes {
		return fmt.Errorf("file is truncated or corrupt: header claims %d metadata keys, more than its %d bytes can hold", nKV, size)
	}
	if nTensors > g.remaining()/minTensorBytes {
		return fmt.Errorf("file is truncated or corrupt: header claims %d tensors, more than its %d bytes can hold", nTensors, size)
	}

	align := uint64(defaultAlign)
	for range nKV {
		key, err := g.str(maxKeyLen, true)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		t, err := g.u32()
		if err != nil {
			return fmt.Errorf("metadata %q: %w", key, err)
		}
		v, err := g.value(t, key)
		if err != nil {
			return fmt.Errorf("metadata %q: %w", key, err)
		}
		if key == "general.alignment" {
			if t != ggufUint32 || v == 0 || v&(v-1) != 0 {
				return fmt.Errorf("metadata %q: must be a power of two uint32", key)
			}
			align = v
		}
	}

	type extent struct{ off, size uint64 }
	extents := make([]extent, 0, nTensors)
	for i := range nTensors {
		name, err := g.str(maxKeyLen, true)
		if err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
		dims, err := g.u32()
		if err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
		if dims == 0 || dims > ggmlMaxDims {
			return fmt.Errorf("tensor %q has %d dimensions", name, dims)
		}
		elems := uint64(1)
		var ne0 uint64
		for d := range dims {
			n, err := g.u64()
			if err != nil {
				return fmt.Errorf("tensor %q: %w", name, err)
			}
			if d == 0 {
				ne0 = n
			}
			hi, lo := bits.Mul64(elems, n)
			if hi != 0 || lo > 1<<62 {
				return fmt.Errorf("tensor %q is impossibly large", name)
			}
			elems = lo
		}
		kind, err := g.u32()
		if err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
		tt := ggml.TensorType(kind)
		if kind >= ggmlTypeCount || tt.TypeSize() == 0 {
			return fmt.Errorf("tensor %q has unknown type %d", name, kind)
		}
		if ne0%tt.BlockSize() != 0 {
			return fmt.Errorf("tensor %q: row of %d is not a multiple of the block size %d", name, ne0, tt.BlockSize())
		}
		hi, lo := bits.Mul64(elems, tt.TypeSize())
		if hi != 0 {
			return fmt.Errorf("tensor %q is impossibly large", name)
		}
		off, err := g.u64()
		if err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
		if off%align != 0 {
			return fmt.Errorf("tensor %q: data offset %d is not aligned to %d", name, off, align)
		}
		extents = append(extents, extent{off, lo / tt.BlockSize()})
	}

	dataStart := g.pos + (align-g.pos%align)%align
	if dataStart > g.size {
		if nTensors == 0 {
			return nil // metadata-only file: no data section needed
		}
		return errTruncated
	}
	dataSize := g.size - dataStart
	for i, e := range extents {
		if e.off > dataSize || e.size > dataSize-e.off {
			return fmt.Errorf("file is truncated: tensor %d ends past the end of the file", i)
		}
	}
	return nil
}
