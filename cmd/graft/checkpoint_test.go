package main

import (
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
