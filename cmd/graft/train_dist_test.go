package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrainPartitionedJSON(t *testing.T) {
	code, stdout, stderr := runGraft(t, "train", "--parts", "3", "--partition", "multilevel", "--compress", "truncate",
		"--schedule", "linear:16:1:2", "--link", "1gbit:1ms", "--epochs", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if sum["parts"] != 3.0 || sum["compress"] != "truncate" || sum["partition"] != "multilevel" {
		t.Errorf("summary %v", sum)
	}
	for _, k := range []string{"bytes_total", "bytes_fwd", "bytes_bwd", "emulated_seconds", "worker_imbalance"} {
		if v, ok := sum[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, sum[k])
		}
	}
}

func TestTrainPartitionFromAssignmentFile(t *testing.T) {
	// Cora has 2708 nodes: alternate two parts.
	var b strings.Builder
	for v := range 2708 {
		b.WriteString([]string{"0\n", "1\n"}[v%2])
	}
	path := filepath.Join(t.TempDir(), "cora.part.2")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runGraft(t, "train", "--parts", "2", "--partition", path, "--epochs", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, `"parts":2`) {
		t.Errorf("summary %s", stdout)
	}
}

func TestTrainPartitionedErrors(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("0\n1\n"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--parts", "0"}, 2, "want at least 1"},
		{[]string{"--parts", "5000"}, 2, "only 2708 nodes"},
		{[]string{"--compress", "zip"}, 2, "want one of none, truncate"},
		{[]string{"--compress", "truncate", "--schedule", "linear:1:2:5"}, 2, "floor"},
		{[]string{"--link", "fast"}, 2, "--link"},
		{[]string{"--parts", "2", "--partition", "no-such-file"}, 2, "neither a method"},
		{[]string{"--parts", "2", "--partition", short}, 1, "2 entries for 2708 nodes"},
	}
	for _, tt := range tests {
		code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "2"}, tt.args...)...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != tt.code || !strings.Contains(lines[len(lines)-1], tt.want) {
			t.Errorf("%v: exit %d, last line %q; want exit %d and %q", tt.args, code, lines[len(lines)-1], tt.code, tt.want)
		}
	}
}
