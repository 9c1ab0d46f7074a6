package config

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes, written as a number of bytes or a number
// with a unit (ParseByteSize). It is a pflag.Value, so a flag can set it,
// and String writes what ParseByteSize reads back exactly.
type ByteSize int64

// sizeProblem is the message of a size that does not parse.
const sizeProblem = "not a size (want bytes, or a number with a unit: 300MB, 512MiB, 1.5GiB)"

var errSize = errors.New(sizeProblem)

// Set parses s (pflag.Value).
func (b *ByteSize) Set(s string) error {
	n, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// Type names the value in help texts (pflag.Value).
func (b *ByteSize) Type() string { return "size" }

// String is the size in the largest binary unit that divides it exactly.
func (b ByteSize) String() string {
	n := int64(b)
	if n <= 0 {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// unitSizes maps the units ParseByteSize takes (lower case) to bytes: KB,
// MB, GB, TB are powers of 1000, as disks count; KiB, MiB, GiB, TiB and
// the bare K, M, G, T (as du and sort -S read them) powers of 1024.
var unitSizes = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseByteSize reads a size: digits with an optional fraction, then an
// optional unit (case-insensitive, a space allowed before it): 1048576,
// 300MB, 512MiB, 1.5G. A fraction of a byte is dropped. Negative numbers,
// exponents, NaN and sizes beyond int64 are errors.
func ParseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if len(s) > 64 { // no size needs more; keeps big.Rat's work small
		return 0, errSize
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	mult, ok := unitSizes[unit]
	if !ok || num == "" || num == "." || strings.Count(num, ".") > 1 {
		return 0, errSize
	}
	// Exact arithmetic: no float rounding, and overflow is seen.
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, errSize
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() {
		return 0, errSize
	}
	return n.Int64(), nil
}
