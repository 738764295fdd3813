package checkpoint

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	Step int // the number of completed epochs or steps
	// Run identifies the run the checkpoint belongs to (NewRun makes one;
	// a resumed run keeps its checkpoint's): Save removes only older
	// checkpoints of the same run, and Claim refuses a directory holding
	// another run's.
	Run string
	// Config records, by name, the settings that determine the run's
	// trajectory, for a resume to compare with its own (CheckConfig).
	Config  map[string]string
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
	Step       int               `json:"step"`
	Run        string            `json:"run,omitempty"`
	Config     map[string]string `json:"config,omitempty"`
	ConfigHash string            `json:"config_sha256,omitempty"`
	Meta       json.RawMessage   `json:"meta,omitempty"`
	Tensors    []tensorHeader    `json:"tensors"`
}

type tensorHeader struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Count int64  `json:"count"`
}

// Encode writes s in the checkpoint format: magic, header length, JSON
// header, the tensors' little-endian float32 data, then SHA-256 of it all.
func Encode(w io.Writer, s *State) error {
	h := header{Step: s.Step, Run: s.Run, Config: s.Config, Meta: s.Meta}
	if s.Config != nil {
		h.ConfigHash = ConfigHash(s.Config)
	}
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
	if h.ConfigHash != "" && h.ConfigHash != ConfigHash(h.Config) {
		return nil, fmt.Errorf("%w: the settings do not match their hash", ErrCorrupt)
	}
	data := rest[hl:]
	s := &State{Step: h.Step, Run: h.Run, Config: h.Config, Meta: h.Meta}
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
// removes all but the newest keep checkpoints of s's run (keep ≤ 0 keeps
// all); checkpoints of other runs are never removed, nor overwritten.
func Save(dir string, s *State, keep int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	final := filepath.Join(dir, fmt.Sprintf("%s%09d%s", filePrefix, s.Step, fileSuffix))
	if h, err := readHeader(final); err == nil && h.Run != s.Run {
		return "", fmt.Errorf("checkpoint: %s belongs to run %s, not to this run (%s)", final, runName(h.Run), runName(s.Run))
	}
	if err := atomicfile.Write(final, func(w io.Writer) error { return Encode(w, s) }); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if keep > 0 {
		paths, _ := list(dir)
		var older []string // this run's, before the one just written
		for _, p := range paths {
			if p == final {
				break
			}
			if h, err := readHeader(p); err == nil && h.Run == s.Run {
				older = append(older, p)
			}
		}
		for len(older) > keep-1 {
			os.Remove(older[0])
			older = older[1:]
		}
	}
	return final, nil
}

// readHeader reads the header of the checkpoint file at path, without
// reading or verifying the rest.
func readHeader(path string) (header, error) {
	f, err := os.Open(path)
	if err != nil {
		return header{}, err
	}
	defer f.Close()
	var pre [len(magic) + 4]byte
	if _, err := io.ReadFull(f, pre[:]); err != nil || string(pre[:len(magic)]) != magic {
		return header{}, fmt.Errorf("%w: not a graft checkpoint", ErrCorrupt)
	}
	hl := int64(binary.LittleEndian.Uint32(pre[len(magic):]))
	if hl > maxHeader {
		return header{}, fmt.Errorf("%w: header length %d", ErrCorrupt, hl)
	}
	b, err := io.ReadAll(io.LimitReader(f, hl))
	if err != nil {
		return header{}, err
	}
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return header{}, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	return h, nil
}

// ConfigHash identifies a run's settings in a few characters: the first 16
// hex digits of the SHA-256 of its "name=value" lines in name order. With
// the run's identity it names what a checkpoint belongs to; each checkpoint
// carries it, and messages show it.
func ConfigHash(config map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(config)) {
		fmt.Fprintf(h, "%s=%s\n", k, config[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// NewRun returns a fresh run identity.
func NewRun() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// runName is how messages name a run.
func runName(run string) string {
	if run == "" {
		return "(unnamed, from an older graft)"
	}
	return run
}

// tempPrefix starts the temporary files of checkpoints being written.
const tempPrefix = atomicfile.TempPrefix + filePrefix

// Claim prepares dir to receive run's checkpoints: it removes the
// temporary files interrupted saves left behind, and refuses a directory
// that holds checkpoints of another run (naming it and its newest step),
// so that one run never removes or resumes another's. A missing directory
// is fine.
func Claim(dir, run string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), tempPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("checkpoint: removing a leftover temporary file: %w", err)
			}
		}
	}
	paths, err := list(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for i := len(paths) - 1; i >= 0; i-- {
		h, err := readHeader(paths[i])
		if err != nil || h.Run == run {
			continue // unreadable files are LoadLatest's to report
		}
		return &ForeignError{Dir: dir, Run: h.Run, Step: h.Step, Config: h.Config}
	}
	return nil
}

// ForeignError is Claim's refusal of a directory holding another run's
// checkpoints: Run's, the newest after Step, recording Config.
type ForeignError struct {
	Dir    string
	Run    string
	Step   int
	Config map[string]string
}

func (e *ForeignError) Error() string {
	settings := ""
	if e.Config != nil {
		settings = ", settings " + ConfigHash(e.Config)
	}
	return fmt.Sprintf("checkpoint: %s holds checkpoints of another run (run %s%s, the newest after step %d)", e.Dir, runName(e.Run), settings, e.Step)
}

// CheckConfig compares the settings a run was checkpointed with to want,
// the resuming run's, and returns a *ConfigError listing every setting that
// differs, except those in mayChange. A checkpoint that records no settings
// passes (older graft versions did not record them).
func (s *State) CheckConfig(want map[string]string, mayChange ...string) error {
	if s.Config == nil {
		return nil
	}
	var e ConfigError
	for _, k := range slices.Sorted(maps.Keys(merge(s.Config, want))) {
		if was, now := s.Config[k], want[k]; was != now && !slices.Contains(mayChange, k) {
			e.Diffs = append(e.Diffs, ConfigDiff{Name: k, Was: was, Now: now})
		}
	}
	if len(e.Diffs) > 0 {
		return &e
	}
	return nil
}

// ConfigDiff is one setting whose value differs between a checkpoint and a
// resume ("" for a setting one of them does not have).
type ConfigDiff struct{ Name, Was, Now string }

// ConfigError lists the settings of a resume that differ from the
// checkpoint's.
type ConfigError struct{ Diffs []ConfigDiff }

func (e *ConfigError) Error() string {
	s := make([]string, len(e.Diffs))
	for i, d := range e.Diffs {
		s[i] = d.String()
	}
	return "checkpoint: written with " + strings.Join(s, ", ")
}

// String says "name was (now now)", "unset" standing for "".
func (d ConfigDiff) String() string {
	return fmt.Sprintf("%s %s (now %s)", d.Name, orNone(d.Was), orNone(d.Now))
}

func merge(a, b map[string]string) map[string]string {
	m := maps.Clone(a)
	maps.Copy(m, b)
	return m
}

func orNone(v string) string {
	if v == "" {
		return "unset"
	}
	return v
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
