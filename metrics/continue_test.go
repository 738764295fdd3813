package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A resumed run's epoch file keeps the interrupted run's records before the
// epoch it resumes at, byte for byte, and continues after them.
func TestContinueEpochs(t *testing.T) {
	const before = "{\"epoch\":1,\"loss\":2.5}\n{\"epoch\":2,\"loss\":2.25}\n\n{\"epoch\":3,\"loss\":2}\n{\"epoch\":4,\"loss\":1.75}\n{\"epoch\":5,\"lo"
	for _, tc := range []struct {
		name, file string // file: "" for none
		from       int
		keep       string // the lines kept before the new ones
		err        string
	}{
		{"resume at 3", before, 3, "{\"epoch\":1,\"loss\":2.5}\n{\"epoch\":2,\"loss\":2.25}\n", ""},
		{"resume at 1", before, 1, "", ""},
		{"resume after all", before, 9, "{\"epoch\":1,\"loss\":2.5}\n{\"epoch\":2,\"loss\":2.25}\n{\"epoch\":3,\"loss\":2}\n{\"epoch\":4,\"loss\":1.75}\n", ""},
		{"no file", "", 3, "", ""},
		{"not an epoch file", "{\"epoch\":1}\n{\"name\":\"x\"}\n", 2, "", "line 2 is not an epoch record"},
		{"not JSON", "epoch 1\n", 2, "", "line 1 is not an epoch record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.jsonl")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := ContinueEpochs(path)
			err := s.Record(Epoch{Epoch: tc.from, Loss: 1})
			if err == nil {
				err = s.Record(Epoch{Epoch: tc.from + 1, Loss: 0.5})
			}
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if b, _ := os.ReadFile(path); string(b) != tc.file {
					t.Errorf("a refused file changed: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			if !strings.HasPrefix(got, tc.keep) {
				t.Fatalf("file %q does not start with %q", got, tc.keep)
			}
			epochs, err := ReadJSONLines(strings.NewReader(got[len(tc.keep):]))
			if err != nil || len(epochs) != 2 || epochs[0].Epoch != tc.from || epochs[1].Epoch != tc.from+1 || epochs[1].Loss != 0.5 {
				t.Errorf("appended %+v, %v", epochs, err)
			}
		})
	}
}
