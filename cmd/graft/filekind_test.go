package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A binary file given where a text or .npy file belongs says what it is,
// rather than being parsed into an error about its bytes.
func TestBinaryFilesNamedForWhatTheyAre(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	model, _ := trainSaved(t, dir, "m.safetensors", "--epochs", "1")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	png := write("x.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"))
	zip := write("y.csv", []byte("PK\x03\x04\x14\x00\x00\x00\x00\x00arr_0.npy"))
	csvAsNPY := write("x.npy", []byte("node,f1,f2\n0,1,2\n"))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a model file as the dataset", []string{"train", "--dataset", model}, "m.safetensors is not a text file: it is a safetensors file"},
		{"a PNG as features", []string{"train", "--features", png}, `x.png is not a text file: it is a PNG image (it begins with "\x89PNG\r\n\x1a\n")`},
		{"a zip archive as labels", []string{"data", "info", "cora", "--labels", zip}, "y.csv is not a text file: it is a zip archive"},
		{"text as .npy", []string{"train", "--features", csvAsNPY}, `x.npy: not a .npy array (missing "\x93NUMPY" magic); it begins with text, "node,f1,f2"`},
		{"a PNG as a split", []string{"train", "--split", "file:" + png}, "x.png is not a text file: it is a PNG image"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFailure(t, tc.args, 1, tc.want) })
	}
}
