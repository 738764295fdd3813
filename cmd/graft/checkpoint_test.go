package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// --eval-every may change on resume only when --resume-allow names it; the
// refusal says so in one line.
func TestResumeAllowEvalEvery(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	args := []string{"train", "--epochs", "3", "--checkpoint-dir", dir, "--checkpoint-every", "1"}
	if code, _, errOut := runGraft(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	resume := []string{"train", "--epochs", "3", "--resume", dir, "--eval-every", "2"}
	code, _, errOut := runGraft(t, resume...)
	if last := lastLine(errOut); code == 0 || !strings.HasPrefix(last, "graft train: --resume "+dir) ||
		!strings.Contains(last, "--eval-every 1 (now 2)") || !strings.Contains(last, "--resume-allow eval-every") {
		t.Fatalf("resuming with another --eval-every: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runGraft(t, append(resume, "--resume-allow", "eval-every")...); code != 0 {
		t.Fatalf("resuming with --resume-allow eval-every: exit %d: %s", code, errOut)
	}
}

// lastLine is the last line of a command's stderr, where its error is.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A new run refuses a --checkpoint-dir holding another run's checkpoints
// (it would delete its own new ones, numbered lower, and --resume would
// continue the other run), leaves them as they were, and removes what
// interrupted saves left; resuming continues the run the checkpoints are
// of.
func TestNewRunRefusesAnotherRunsCheckpointDir(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	code, first, errOut := runGraft(t, "train", "--epochs", "6", "--checkpoint-dir", dir, "--checkpoint-every", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	before := dirFiles(t, dir)
	if len(before) != 3 {
		t.Fatalf("the run left %v, want its newest 3 checkpoints", before)
	}
	tmp := filepath.Join(dir, ".tmp-checkpoint-000000009.ckpt-4242")
	if err := os.WriteFile(tmp, []byte("half a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runGraft(t, "train", "--epochs", "9", "--seed", "2", "--checkpoint-dir", dir, "--checkpoint-every", "1")
	if last := lastLine(errOut); code == 0 || !strings.Contains(last, "holds checkpoints of another run") || !strings.Contains(last, "--resume "+dir) ||
		!strings.Contains(last, "(that run was trained with --epochs 6 (now 9), --seed 1 (now 2))") {
		t.Fatalf("a new run in another run's directory: exit %d: %s", code, errOut)
	}
	if after := dirFiles(t, dir); !slices.Equal(after, before) {
		t.Fatalf("the directory held %v, and after the refusal %v", before, after)
	}
	code, resumed, errOut := runGraft(t, "train", "--epochs", "6", "--resume", dir, "--json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	var a, b map[string]any
	json.Unmarshal([]byte(first), &a)
	json.Unmarshal([]byte(resumed), &b)
	for _, k := range []string{"seed", "best_epoch", "best_val_acc", "test_acc"} {
		if a[k] == nil || a[k] != b[k] {
			t.Errorf("%s: resumed %v, the run %v", k, b[k], a[k])
		}
	}
}

// dirFiles lists the names in dir.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// --resume refuses data changed under the same file names (here labels
// rewritten), which the flags alone cannot tell.
func TestResumeRefusesChangedData(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	dir := t.TempDir()
	args := []string{"train", "--dataset", edges, "--labels", labels, "--features", features, "--epochs", "2"}
	if code, _, errOut := runGraft(t, append(args, "--checkpoint-dir", dir, "--checkpoint-every", "1")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(labels)
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.NewReplacer("red", "blue", "blue", "red").Replace(string(b))
	if err := os.WriteFile(labels, []byte(swapped), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runGraft(t, append(args, "--resume", dir)...)
	if last := lastLine(errOut); code == 0 || !strings.Contains(last, "other data: data 20 nodes") {
		t.Fatalf("resuming on changed labels: exit %d: %s", code, errOut)
	}
}

// A resume with settings that --resume-allow cannot let change (the model,
// its widths) says that they are fixed for the run and how to train with
// them, rather than suggest --resume-allow for them too.
func TestResumeNamesWhatCannotChange(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	if code, _, errOut := runGraft(t, "train", "--epochs", "2", "--checkpoint-dir", dir, "--checkpoint-every", "1"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--epochs", "3"}, "(--resume-allow epochs lets them change)"},
		{[]string{"--epochs", "3", "--hidden", "8"}, "(--resume-allow epochs lets epochs change; the others cannot change within a run: to train with them, start afresh, without --resume)"},
		{[]string{"--epochs", "2", "--hidden", "8"}, ", or start afresh, without --resume, to train with these (they cannot change within a run)"},
	} {
		code, _, errOut := runGraft(t, append([]string{"train", "--resume", dir}, tt.args...)...)
		if last := lastLine(errOut); code == 0 || !strings.Contains(last, "--hidden 16 (now 8)") == (len(tt.args) > 2) || !strings.HasSuffix(last, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want one ending in %q", tt.args, code, errOut, tt.want)
		}
	}
}
