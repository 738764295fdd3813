package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data directory that does not exist, or is a file, is named as such,
// not as a dataset file missing from it.
func TestDataDirThatIsNone(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "no-such-dir")
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runGraft(t, "data", "list", "--data-dir", none)
	if want := "data directory: " + none + " (it does not exist; set --data-dir or GRAFT_DATA)"; code != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("exit %d, stdout %q; want it to start %q", code, stdout, want)
	}
	for _, tc := range []struct{ dir, want string }{
		{none, "does not exist"},
		{file, "is not a directory"},
	} {
		code, _, stderr := runGraft(t, "train", "--dataset", "citeseer", "--data-dir", tc.dir, "--epochs", "1")
		want := "graft train: dataset citeseer: the data directory " + tc.dir + " " + tc.want + " (--data-dir or GRAFT_DATA)"
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
		}
	}
}
