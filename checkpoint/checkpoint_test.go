package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

func runSample(run string, step int) *State {
	s := sample(step)
	s.Run = run
	return s
}

// Retention removes only the saving run's older checkpoints: a directory
// that already holds higher-numbered checkpoints of another run keeps them,
// and keeps the new run's too.
func TestSaveRemovesOnlyItsOwnRunsCheckpoints(t *testing.T) {
	dir := t.TempDir()
	for _, step := range []int{10, 20, 30} {
		if _, err := Save(dir, runSample("a", step), 3); err != nil {
			t.Fatal(err)
		}
	}
	for step := 1; step <= 5; step++ {
		if _, err := Save(dir, runSample("b", step), 3); err != nil {
			t.Fatal(err)
		}
	}
	paths, _ := list(dir)
	var got []string
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s%d", s.Run, s.Step))
	}
	if want := []string{"b3", "b4", "b5", "a10", "a20", "a30"}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	// Another run's file of the same step is not overwritten.
	if _, err := Save(dir, runSample("b", 20), 3); err == nil || !strings.Contains(err.Error(), "belongs to run a") {
		t.Fatalf("saving over another run's checkpoint: %v", err)
	}
}

// Claim removes leftover temporary files and refuses a directory holding
// another run's checkpoints, naming it; its own, or none, pass.
func TestClaim(t *testing.T) {
	dir := t.TempDir()
	if err := Claim(filepath.Join(dir, "missing"), "a"); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".tmp-checkpoint-000000004.ckpt-99")
	other := filepath.Join(dir, ".tmp-other")
	os.WriteFile(tmp, []byte("partial"), 0o644)
	os.WriteFile(other, []byte("not ours"), 0o644)
	if err := Claim(dir, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("leftover %s not removed: %v", tmp, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("%s, not a checkpoint's, was removed: %v", other, err)
	}
	if _, err := Save(dir, runSample("a", 7), 3); err != nil {
		t.Fatal(err)
	}
	if err := Claim(dir, "a"); err != nil {
		t.Fatalf("claiming a directory of the same run: %v", err)
	}
	var fe *ForeignError
	if err := Claim(dir, "b"); !errors.As(err, &fe) || fe.Run != "a" || fe.Step != 7 || !strings.Contains(err.Error(), "another run") {
		t.Fatalf("claiming another run's directory: %v", err)
	}
}

func TestCheckConfig(t *testing.T) {
	s := &State{Config: map[string]string{"seed": "1", "lr": "0.01", "epochs": "200"}}
	if err := s.CheckConfig(map[string]string{"seed": "1", "lr": "0.01", "epochs": "200"}); err != nil {
		t.Fatal(err)
	}
	err := s.CheckConfig(map[string]string{"seed": "2", "lr": "0.01", "epochs": "300", "sampler": "neighbor:5"}, "epochs")
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Diffs) != 2 || ce.Diffs[0] != (ConfigDiff{"sampler", "", "neighbor:5"}) ||
		ce.Diffs[1] != (ConfigDiff{"seed", "1", "2"}) {
		t.Fatalf("CheckConfig: %v", err)
	}
	if err := (&State{}).CheckConfig(map[string]string{"seed": "2"}); err != nil {
		t.Fatalf("a checkpoint without a record: %v", err)
	}
}

// Run and configuration survive the file format.
func TestRunAndConfigRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	want := runSample("abc", 2)
	want.Config = map[string]string{"seed": "3"}
	if err := Encode(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(buf.Bytes())
	if err != nil || got.Run != "abc" || got.Config["seed"] != "3" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

// A checkpoint carries the hash of its settings, which names them in a few
// characters; settings that do not match it are refused as corrupt.
func TestConfigHash(t *testing.T) {
	a := map[string]string{"lr": "0.01", "seed": "1"}
	if ConfigHash(a) != ConfigHash(map[string]string{"seed": "1", "lr": "0.01"}) || len(ConfigHash(a)) != 16 {
		t.Fatalf("hash %q is not one of the settings alone", ConfigHash(a))
	}
	if ConfigHash(a) == ConfigHash(map[string]string{"lr": "0.02", "seed": "1"}) || ConfigHash(a) == ConfigHash(map[string]string{"lr": "0.01", "seed": "1", "x": ""}) {
		t.Fatal("other settings hash alike")
	}
	s := sample(3)
	s.Config = a
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if !bytes.Contains(b, []byte(`"config_sha256":"`+ConfigHash(a)+`"`)) {
		t.Fatalf("the header lacks the settings' hash: %.200q", b)
	}
	if got, err := Decode(b); err != nil || got.Config["lr"] != "0.01" {
		t.Fatalf("Decode: %+v, %v", got, err)
	}
	// Other settings under the old hash, the file's checksum made right.
	body := bytes.Replace(b[:len(b)-sha256.Size], []byte(`"lr":"0.01"`), []byte(`"lr":"0.02"`), 1)
	sum := sha256.Sum256(body)
	if _, err := Decode(append(body, sum[:]...)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("settings changed under their hash: %v", err)
	}
}
