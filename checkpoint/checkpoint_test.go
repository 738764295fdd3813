package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample(step int) *State {
	return &State{
		Step: step,
		Meta: json.RawMessage(`{"schedule":{"ratio":4},"seed":7}`),
		Tensors: []Tensor{
			{Name: "layers.0.weight", Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, 0, 1e-30, -7}},
			{Name: "layers.0.bias", Shape: []int{3}, Data: []float32{0.25, 0.5, 0.75}},
			{Name: "empty", Shape: []int{0, 4}, Data: nil},
		},
	}
}

func TestRoundTripIsBitExact(t *testing.T) {
	var buf bytes.Buffer
	want := sample(12)
	if err := Encode(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != want.Step || string(got.Meta) != string(want.Meta) || len(got.Tensors) != len(want.Tensors) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want.Tensors {
		g := got.Tensors[i]
		if g.Name != w.Name || len(g.Data) != len(w.Data) {
			t.Fatalf("tensor %d: %+v", i, g)
		}
		for j := range w.Data {
			if g.Data[j] != w.Data[j] {
				t.Fatalf("%s[%d] = %v, want %v", w.Name, j, g.Data[j], w.Data[j])
			}
		}
	}
	if got.Tensor("layers.0.bias") == nil || got.Tensor("nope") != nil {
		t.Fatal("Tensor lookup")
	}
}

func TestCorruptionIsDetected(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample(1)); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	for _, i := range []int{0, 9, 20, len(b) / 2, len(b) - 1} {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, err := Decode(c); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flipping byte %d: err = %v, want ErrCorrupt", i, err)
		}
	}
	for _, n := range []int{0, 5, len(b) - 1} {
		if _, err := Decode(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d bytes: err = %v", n, err)
		}
	}
}

func TestShapeMismatchIsRefusedOnSave(t *testing.T) {
	s := &State{Tensors: []Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float32{1}}}}
	if err := Encode(&bytes.Buffer{}, s); err == nil {
		t.Fatal("shape mismatch accepted")
	}
}

func TestSaveKeepsNewestAndLoadLatestSkipsCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	for step := 1; step <= 4; step++ {
		if _, err := Save(dir, sample(step), 2); err != nil {
			t.Fatal(err)
		}
	}
	paths, _ := list(dir)
	if len(paths) != 2 || !strings.HasSuffix(paths[1], "checkpoint-000000004.ckpt") {
		t.Fatalf("kept %v", paths)
	}
	// A crash mid-write leaves only a temporary file, which is ignored.
	os.WriteFile(filepath.Join(dir, ".tmp-checkpoint-123"), []byte("partial"), 0o644)
	s, path, err := LoadLatest(dir, nil)
	if err != nil || s.Step != 4 {
		t.Fatalf("LoadLatest = step %v, %v", s, err)
	}
	// Corrupt the newest: the previous good one is used, with a warning.
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o644)
	var warnings []string
	s, _, err = LoadLatest(dir, func(w string) { warnings = append(warnings, w) })
	if err != nil || s.Step != 3 {
		t.Fatalf("after corruption: %v, %v", s, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "corrupt") {
		t.Fatalf("warnings %q", warnings)
	}
	// Every file bad: a clear error naming the newest.
	os.WriteFile(paths[0], []byte("GRAFTCK1 nonsense"), 0o644)
	if _, _, err := LoadLatest(dir, nil); err == nil || !strings.Contains(err.Error(), "checkpoint-000000004") {
		t.Fatalf("all corrupt: err = %v", err)
	}
}

func TestLoadLatestEmptyDir(t *testing.T) {
	if _, _, err := LoadLatest(t.TempDir(), nil); err == nil {
		t.Fatal("empty directory accepted")
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	Encode(&buf, sample(3))
	f.Add(buf.Bytes())
	f.Add([]byte("GRAFTCK1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Decode(b) // must not panic
		// Past the checksum too: the parser must survive any body.
		if len(b) > sha256.Size {
			decodeBody(b[:len(b)-sha256.Size])
		}
	})
}
