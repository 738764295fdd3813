package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		check   func(string) error
		path    string
		wantErr string // "" for none
	}{
		{"new file", CheckWritable, filepath.Join(dir, "new"), ""},
		{"existing file", CheckWritable, file, ""},
		{"directory as file", CheckWritable, dir, "is a directory"},
		{"missing directory", CheckWritable, filepath.Join(dir, "a", "new"), "directory " + filepath.Join(dir, "a") + " does not exist"},
		{"file as directory", CheckWritable, filepath.Join(file, "new"), file + " is not a directory"},
		{"existing directory", CheckWritableDir, dir, ""},
		{"directories to create", CheckWritableDir, filepath.Join(dir, "a", "b"), ""},
		{"directory under a file", CheckWritableDir, filepath.Join(file, "a", "b"), file + " is not a directory"},
	}
	for _, tt := range tests {
		err := tt.check(tt.path)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), tt.path)):
			t.Errorf("%s: error %v, want one starting with the path and saying %q", tt.name, err, tt.wantErr)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "file" {
		t.Errorf("the checks left %v behind", entries)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the check changed an existing file to %q", b)
	}
}
