package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An output that cannot be written is refused before any work: one line
// naming the path, no epoch run, and nothing left in the directories.
func TestUnwritableOutputsFailFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	good := filepath.Join(dir, "m.safetensors")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"save under a missing directory", []string{"train", "--save", filepath.Join(missing, "m.safetensors")},
			"graft train: --save " + filepath.Join(missing, "m.safetensors") + ": directory " + missing + " does not exist"},
		{"save onto a directory", []string{"train", "--save", dir}, "graft train: --save " + dir + " is a directory"},
		{"metrics under a missing directory", []string{"train", "--save", good, "--metrics", filepath.Join(missing, "m.jsonl")},
			"graft train: --metrics " + filepath.Join(missing, "m.jsonl") + ": directory " + missing + " does not exist"},
		{"checkpoints under a file", []string{"train", "--metrics", filepath.Join(dir, "m.jsonl"), "--checkpoint-dir", filepath.Join(file, "ck")},
			"graft train: --checkpoint-dir " + filepath.Join(file, "ck") + ": " + file + " is not a directory"},
		{"sampled run", []string{"train", "--sampler", "neighbor:5,5", "--save", filepath.Join(missing, "m.safetensors")},
			"graft train: --save " + filepath.Join(missing, "m.safetensors") + ": directory " + missing + " does not exist"},
		{"profile", []string{"train", "--save", good, "--cpuprofile", filepath.Join(missing, "cpu.pprof")},
			"graft train: --cpuprofile open " + filepath.Join(missing, "cpu.pprof") + ": no such file or directory"},
		{"partition assignment", []string{"partition", "--dataset", "cora", "--parts", "2", "--out", filepath.Join(missing, "a.txt")},
			"graft partition: --out " + filepath.Join(missing, "a.txt") + ": directory " + missing + " does not exist"},
		{"partition parts", []string{"partition", "--dataset", "cora", "--parts", "2", "--out", filepath.Join(file, "parts") + "/"},
			"graft partition: --out " + filepath.Join(file, "parts") + "/: " + file + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := listDir(t, dir)
			code, stdout, stderr := runGraft(t, tt.args...)
			if code != 1 || stderr != tt.want+"\n" {
				t.Errorf("exit code %d, stderr\n%s\nwant 1 and only\n%s", code, stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if after := listDir(t, dir); !slices.Equal(before, after) {
				t.Errorf("the directory held %v and now %v", before, after)
			}
		})
	}
}

// A directory the user cannot write to is refused too (root writes
// anywhere, so the test needs another user).
func TestReadOnlyDirectoryFailsFirst(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write to a read-only directory")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	save := filepath.Join(ro, "m.safetensors")
	code, _, stderr := runGraft(t, "train", "--save", save)
	want := "graft train: --save " + save + ": cannot create files in " + ro + ": permission denied\n"
	if code != 1 || stderr != want {
		t.Errorf("exit code %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		names = append(names, strings.TrimPrefix(path, dir))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
