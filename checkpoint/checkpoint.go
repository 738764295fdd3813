package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/graft-gnn/graft/internal/atomicfile"
)

// Tensor is a named float32 array with its shape.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// State is one checkpoint.
type State struct {
	Step    int             // the number of completed epochs or steps
	Meta    json.RawMessage // everything else, as the trainer defines it
	Tensors []Tensor
}

// Tensor returns the tensor with the given name, or nil.
func (s *State) Tensor(name string) *Tensor {
	for i := range s.Tensors {
		if s.Tensors[i].Name == name {
			return &s.Tensors[i]
		}
	}
	return nil
}

const (
	magic      = "GRAFTCK1"
	filePrefix = "checkpoint-"
	fileSuffix = ".ckpt"
	maxHeader  = 64 << 20
)

type header struct {
	Step    int             `json:"step"`
	Meta    json.RawMessage `json:"meta,omitempty"`
	Tensors []tensorHeader  `json:"tensors"`
}

type tensorHeader struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Count int64  `json:"count"`
}

// Encode writes s in the checkpoint format: magic, header length, JSON
// header, the tensors' little-endian float32 data, then SHA-256 of it all.
func Encode(w io.Writer, s *State) error {
	h := header{Step: s.Step, Meta: s.Meta}
	for _, t := range s.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= int64(d)
		}
		if n != int64(len(t.Data)) {
			return fmt.Errorf("checkpoint: tensor %q has %d values for shape %v", t.Name, len(t.Data), t.Shape)
		}
		h.Tensors = append(h.Tensors, tensorHeader{Name: t.Name, Shape: t.Shape, Count: n})
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	sum := sha256.New()
	out := io.MultiWriter(w, sum)
	var buf [4]byte
	binary.LittleEndian.PutUint32(buf[:], uint32(len(hj)))
	if _, err := io.WriteString(out, magic); err != nil {
		return err
	}
	if _, err := out.Write(buf[:]); err != nil {
		return err
	}
	if _, err := out.Write(hj); err != nil {
		return err
	}
	chunk := make([]byte, 0, 1<<16)
	for _, t := range s.Tensors {
		for _, v := range t.Data {
			chunk = binary.LittleEndian.AppendUint32(chunk, math.Float32bits(v))
			if len(chunk) == cap(chunk) {
				if _, err := out.Write(chunk); err != nil {
					return err
				}
				chunk = chunk[:0]
			}
		}
	}
	if _, err := out.Write(chunk); err != nil {
		return err
	}
	_, err = w.Write(sum.Sum(nil))
	return err
}

// ErrCorrupt marks a checkpoint whose bytes do not verify.
var ErrCorrupt = errors.New("checkpoint is corrupt or incomplete")

// Decode reads a checkpoint from its complete bytes, verifying the checksum
// before trusting anything in it.
func Decode(b []byte) (*State, error) {
	if len(b) < len(magic)+4+sha256.Size || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a graft checkpoint or truncated (%d bytes)", ErrCorrupt, len(b))
	}
	body, want := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], want) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return decodeBody(body)
}

// decodeBody parses a checksum-verified body; it still checks every length,
// since a file can be well-formed by checksum and wrong by construction.
func decodeBody(body []byte) (*State, error) {
	if len(body) < len(magic)+4 {
		return nil, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	hl := int(binary.LittleEndian.Uint32(body[len(magic):]))
	rest := body[len(magic)+4:]
	if hl > maxHeader || hl > len(rest) {
		return nil, fmt.Errorf("%w: header length %d beyond the file", ErrCorrupt, hl)
	}
	var h header
	if err := json.Unmarshal(rest[:hl], &h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	data := rest[hl:]
	s := &State{Step: h.Step, Meta: h.Meta}
	for _, th := range h.Tensors {
		n := int64(1)
		for _, d := range th.Shape {
			if d < 0 || (d > 0 && n > math.MaxInt64/8/int64(d)) {
				return nil, fmt.Errorf("%w: tensor %q has shape %v", ErrCorrupt, th.Name, th.Shape)
			}
			n *= int64(d)
		}
		if n != th.Count || 4*n > int64(len(data)) {
			return nil, fmt.Errorf("%w: tensor %q (%d values) does not fit the file", ErrCorrupt, th.Name, th.Count)
		}
		t := Tensor{Name: th.Name, Shape: th.Shape, Data: make([]float32, n)}
		for i := range t.Data {
			t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		data = data[4*n:]
		s.Tensors = append(s.Tensors, t)
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: %d unexplained bytes after the tensors", ErrCorrupt, len(data))
	}
	return s, nil
}

// Save writes s atomically into dir as checkpoint-<step>.ckpt and then
// removes all but the newest keep checkpoints (keep ≤ 0 keeps all).
func Save(dir string, s *State, keep int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	final := filepath.Join(dir, fmt.Sprintf("%s%09d%s", filePrefix, s.Step, fileSuffix))
	if err := atomicfile.Write(final, func(w io.Writer) error { return Encode(w, s) }); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if keep > 0 {
		paths, _ := list(dir)
		for len(paths) > keep {
			os.Remove(paths[0])
			paths = paths[1:]
		}
	}
	return final, nil
}

// list returns the checkpoint files in dir, oldest first.
func list(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasPrefix(n, filePrefix) && strings.HasSuffix(n, fileSuffix) {
			paths = append(paths, filepath.Join(dir, n))
		}
	}
	sort.Strings(paths) // zero-padded steps sort in order
	return paths, nil
}

// Load reads one checkpoint file.
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	s, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// LoadLatest returns the newest checkpoint in dir that verifies, with its
// path. Newer files that fail verification are reported through warn (and
// skipped); if none verifies, the error says why the newest failed.
func LoadLatest(dir string, warn func(string)) (*State, string, error) {
	paths, err := list(dir)
	if err != nil {
		return nil, "", fmt.Errorf("checkpoint: %w", err)
	}
	if len(paths) == 0 {
		return nil, "", fmt.Errorf("checkpoint: no checkpoint in %s", dir)
	}
	var newestErr error
	for i := len(paths) - 1; i >= 0; i-- {
		s, err := Load(paths[i])
		if err == nil {
			return s, paths[i], nil
		}
		if newestErr == nil {
			newestErr = err
		}
		if warn != nil {
			warn(fmt.Sprintf("refusing %v", err))
		}
	}
	return nil, "", newestErr
}
