// Package models finds, inspects, lists and downloads GGUF model files, and
// formats chat messages with a model's own chat template.
//
// Everything here is pure Go: a model file is validated and read with
// github.com/ollama/ollama/fs/ggml before the llama.cpp backend (cgo) ever
// opens it, so a missing, truncated or foreign file is a one-line error
// instead of a crash inside C code.
package models

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

// ErrBadModel is wrapped by every error about a missing, corrupt or
// unsupported model; the CLI maps it to exit status 2.
var ErrBadModel = errors.New("bad model")

// ErrNoModel is returned by Resolve when no model was named and the models
// directory holds none; callers treat it as "no model configured".
var ErrNoModel = errors.New("no model given and none in the models directory")

// Ext is the file extension of model files.
const Ext = ".gguf"

// Info is what Inspect learns about a model file.
type Info struct {
	Name           string `json:"name"` // file name without .gguf
	Path           string `json:"path"`
	Size           int64  `json:"size"` // bytes
	Architecture   string `json:"architecture,omitempty"`
	ParameterCount uint64 `json:"parameter_count,omitempty"`
	Quantization   string `json:"quantization,omitempty"` // file type, e.g. "Q8_0"
	ContextLength  uint64 `json:"context_length,omitempty"`
	ChatTemplate   string `json:"chat_template,omitempty"` // raw tokenizer.chat_template
	// Error is set only by List, for a file that could not be inspected.
	Error string `json:"error,omitempty"`
}

// modelError reads "model FILE: reason"; it matches ErrBadModel and unwraps
// to its cause (so errors.Is(err, fs.ErrNotExist) works too).
type modelError struct {
	msg string
	err error
}

func (e *modelError) Error() string        { return e.msg }
func (e *modelError) Unwrap() error        { return e.err }
func (e *modelError) Is(target error) bool { return target == ErrBadModel }

func badModel(path string, err error, format string, a ...any) error {
	return &modelError{msg: "model " + path + ": " + fmt.Sprintf(format, a...), err: err}
}

// Inspect validates the GGUF file at path and reads its metadata. Errors read
// "model FILE: reason" and wrap ErrBadModel.
func Inspect(path string) (info *Info, err error) {
	f, st, err := openModel(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	// Our own bounded walk first: ggml.Decode trusts lengths and counts in
	// the header (it can allocate terabytes or divide by zero on a hostile
	// file), so it only ever sees a header that passed validate.
	if err := validate(f, st.Size()); err != nil {
		return nil, badModel(path, err, "%v", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, badModel(path, err, "%v", err)
	}
	g, err := decode(f)
	if err != nil {
		return nil, badModel(path, err, "not a valid GGUF file: %v", err)
	}

	kv := g.KV()
	// Plain map reads: ggml.KV's typed getters log at debug level for every
	// absent key, which is noise under --verbose.
	arch, _ := kv["general.architecture"].(string)
	if arch == "" {
		return nil, badModel(path, nil, "GGUF metadata has no general.architecture")
	}
	info = &Info{
		Name:         modelName(path),
		Path:         path,
		Size:         st.Size(),
		Architecture: arch,
		Quantization: quantization(kv, g.Tensors().Items()),
	}
	info.ChatTemplate, _ = kv["tokenizer.chat_template"].(string)
	info.ParameterCount, _ = uintValue(kv["general.parameter_count"]) // Decode sums the tensors' elements
	info.ContextLength, _ = uintValue(kv[arch+".context_length"])
	return info, nil
}

// decode runs ggml.Decode, turning any panic into an error: validate should
// make that impossible, but a crash must never be the answer to a bad file.
func decode(f *os.File) (g *ggml.GGML, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder failed: %v", r)
		}
	}()
	// maxArraySize 0: skip array values (the vocabulary is large and unused).
	return ggml.Decode(f, 0)
}

func openReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// modelName is the file name without directory and .gguf extension.
func modelName(path string) string {
	base := filepath.Base(path)
	if strings.EqualFold(filepath.Ext(base), Ext) {
		base = base[:len(base)-len(Ext)]
	}
	return base
}

// uintValue reads any non-negative integer KV value.
func uintValue(v any) (uint64, bool) {
	switch n := v.(type) {
	case uint8:
		return uint64(n), true
	case uint16:
		return uint64(n), true
	case uint32:
		return uint64(n), true
	case uint64:
		return n, true
	case int8:
		return uint64(n), n >= 0
	case int16:
		return uint64(n), n >= 0
	case int32:
		return uint64(n), n >= 0
	case int64:
		return uint64(n), n >= 0
	}
	return 0, false
}

// fileTypes names llama.cpp's llama_ftype values (general.file_type).
var fileTypes = map[uint64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// quantization names the file type, falling back to the tensor type holding
// the most bytes when general.file_type is absent.
func quantization(kv ggml.KV, tensors []*ggml.Tensor) string {
	if ft, ok := uintValue(kv["general.file_type"]); ok {
		if name, ok := fileTypes[ft]; ok {
			return name
		}
		return fmt.Sprintf("type %d", ft)
	}
	bytes := map[uint32]uint64{}
	for _, t := range tensors {
		if len(t.Shape) >= 2 {
			bytes[t.Kind] += t.Size()
		}
	}
	best, bestBytes := uint32(0), uint64(0)
	for kind, n := range bytes {
		if n > bestBytes || (n == bestBytes && kind < best) {
			best, bestBytes = kind, n
		}
	}
	if bestBytes == 0 {
		return "unknown"
	}
	return ggml.TensorType(best).String()
}

// Resolve turns a --model value into a file path:
//   - a name containing a path separator, or an existing file, is a path;
//   - otherwise NAME, then NAME.gguf, in modelsDir;
//   - an empty name picks the only model in modelsDir (ErrNoModel if there is
//     none; an error listing them if there are several).
//
// The path found must be a regular file (or a symlink to one): a FIFO, device,
// socket or directory is refused with an error naming it, never opened.
// Errors wrap ErrBadModel (except ErrNoModel) and say where Resolve looked.
func Resolve(nameOrPath, modelsDir string) (string, error) {
	if nameOrPath == "" {
		return resolveDefault(modelsDir)
	}
	if st, err := os.Stat(nameOrPath); err == nil {
		if !st.Mode().IsRegular() {
			return "", notRegular(nameOrPath, st.Mode())
		}
		return nameOrPath, nil
	}
	if strings.ContainsRune(nameOrPath, '/') || strings.ContainsRune(nameOrPath, filepath.Separator) {
		return "", badModel(nameOrPath, fs.ErrNotExist, "no such file")
	}
	looked := []string{nameOrPath}
	var refused error
	for _, cand := range []string{nameOrPath, nameOrPath + Ext} {
		if strings.HasSuffix(cand, Ext+Ext) {
			continue
		}
		p := filepath.Join(modelsDir, cand)
		if st, err := os.Stat(p); err == nil {
			if st.Mode().IsRegular() {
				return p, nil
			}
			if refused == nil {
				refused = notRegular(p, st.Mode())
			}
		}
		looked = append(looked, p)
	}
	if refused != nil {
		return "", refused
	}
	return "", badModel(nameOrPath, fs.ErrNotExist, "not found (looked for %s)", strings.Join(looked, ", "))
}

func resolveDefault(modelsDir string) (string, error) {
	files, err := modelFiles(modelsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	// Only regular files are candidates; a FIFO or directory named *.gguf is
	// never picked (and never opened).
	var usable []string
	var refused error
	for _, f := range files {
		if _, err := statModel(filepath.Join(modelsDir, f)); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		usable = append(usable, f)
	}
	switch len(usable) {
	case 0:
		if refused != nil {
			return "", refused
		}
		return "", ErrNoModel
	case 1:
		return filepath.Join(modelsDir, usable[0]), nil
	}
	names := make([]string, len(usable))
	for i, f := range usable {
		names[i] = modelName(f)
	}
	return "", &modelError{msg: fmt.Sprintf("models directory %s holds several models (%s); choose one with --model NAME",
		modelsDir, strings.Join(names, ", "))}
}

// modelFiles lists the names of the *.gguf entries in dir, sorted, whatever
// their type: callers refuse those that are not regular files.
func modelFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("models directory %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if strings.EqualFold(filepath.Ext(e.Name()), Ext) {
			files = append(files, e.Name())
		}
	}
	slices.Sort(files)
	return files, nil
}

// List inspects every *.gguf entry in modelsDir, sorted by name. An entry
// that cannot be inspected (not a GGUF file, or not a regular file: a FIFO,
// device, socket or directory, which is never opened) is listed with Error
// set instead of failing the list. A missing directory is an empty list.
func List(modelsDir string) ([]Info, error) {
	files, err := modelFiles(modelsDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	infos := make([]Info, 0, len(files))
	for _, name := range files {
		p := filepath.Join(modelsDir, name)
		info, err := Inspect(p)
		if err != nil {
			bad := Info{Name: modelName(p), Path: p, Error: err.Error()}
			if st, serr := os.Stat(p); serr == nil && st.Mode().IsRegular() {
				bad.Size = st.Size()
			}
			infos = append(infos, bad)
			continue
		}
		infos = append(infos, *info)
	}
	return infos, nil
}
