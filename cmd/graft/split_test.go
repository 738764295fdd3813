package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/datatest"
	"github.com/graft-gnn/graft/job"
)

// writeTinyLINQS writes a LINQS dataset with no split of its own: classes
// of the given sizes, named c0, c1, …, each node with a one-hot feature of
// its class and edges within its class. It returns the .content path.
func writeTinyLINQS(t *testing.T, sizes ...int) string {
	t.Helper()
	dir := t.TempDir()
	var content, cites strings.Builder
	id := 0
	for c, n := range sizes {
		first := id
		for range n {
			feats := make([]string, len(sizes))
			for j := range feats {
				feats[j] = "0"
			}
			feats[c] = "1"
			fmt.Fprintf(&content, "n%d\t%s\tc%d\n", id, strings.Join(feats, "\t"), c)
			if id > first {
				fmt.Fprintf(&cites, "n%d\tn%d\n", id-1, id)
			}
			id++
		}
	}
	path := filepath.Join(dir, "tiny.content")
	if err := os.WriteFile(path, []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tiny.cites"), []byte(cites.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTrainSplitAuto: with no --split, a dataset's own split is used where
// it ships one and a seeded stratified split otherwise; stderr says which
// in one line, and the summary names it.
func TestTrainSplitAuto(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	tiny := writeTinyLINQS(t, 20, 20, 20)
	tests := []struct {
		name      string
		args      []string
		wantSplit string
		wantLine  string
	}{
		{"dataset with a split", []string{"--dataset", "cora", "--recipe", "none"}, "public", "graft train: split public: the split cora ships (--split auto)"},
		{"recipe's split", []string{"--dataset", "cora"}, "public", ""},
		{"dataset without a split", []string{"--dataset", tiny}, "frac:0.6:0.2", "graft train: split frac:0.6:0.2: stratified 60/20/20 per class with seed 1, as tiny ships no split (--split auto)"},
		{"explicit auto", []string{"--dataset", tiny, "--split", "auto", "--seed", "4"}, "frac:0.6:0.2", "with seed 4, as tiny ships no split"},
		{"explicit split", []string{"--dataset", tiny, "--split", "random:5:5"}, "random:5:5", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"train", "--epochs", "2", "--json"}, tt.args...)
			code, stdout, stderr := runGraft(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var sum job.Summary
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Split != tt.wantSplit {
				t.Errorf("summary split %q, want %q", sum.Split, tt.wantSplit)
			}
			lines := 0
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "graft train: split ") {
					lines++
					if tt.wantLine == "" || !strings.Contains(l, tt.wantLine) {
						t.Errorf("stderr line %q, want one containing %q", l, tt.wantLine)
					}
				}
			}
			if want := min(len(tt.wantLine), 1); lines != want {
				t.Errorf("%d lines about the split on stderr, want %d:\n%s", lines, want, stderr)
			}
		})
	}
}

// TestTrainSplitTooSmall: a class too small for the requested split is
// named with its size, and the error does not suggest the split that
// failed.
func TestTrainSplitTooSmall(t *testing.T) {
	tiny := writeTinyLINQS(t, 30, 30, 4)
	tests := []struct{ split, want string }{
		{"random:20:30", `--split random:20:30: class "c2" has only 4 labelled nodes, fewer than the 50 it asks for`},
		{"frac:0.1:0.1", `--split frac:0.1:0.1: class "c2" has only 4 labelled nodes, and a training fraction of 0.1 gives it none (it needs 5)`},
		{"public", `--split public: dataset tiny ships no fixed split, so there is no split "public"; use auto`},
	}
	for _, tt := range tests {
		t.Run(tt.split, func(t *testing.T) {
			code, _, stderr := runGraft(t, "train", "--dataset", tiny, "--split", tt.split, "--epochs", "2")
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr, tt.want)
			}
			if advice := stderr[strings.Index(stderr, tt.want)+len(tt.want):]; strings.Contains(advice, tt.split) {
				t.Errorf("stderr %q suggests --split %s, the split that failed", stderr, tt.split)
			}
		})
	}
}

// TestPartitionSplitAuto: graft partition --out stores a dataset that
// ships no split with the stratified split auto chooses, and training on
// the parts reports it.
func TestPartitionSplitAuto(t *testing.T) {
	t.Setenv("GRAFT_TOKEN", "")
	tiny := writeTinyLINQS(t, 20, 20, 20)
	dir := filepath.Join(t.TempDir(), "parts") + "/"
	if code, _, stderr := runGraft(t, "partition", "--dataset", tiny, "--parts", "2", "--out", dir); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, stderr)
	}
	sum, _ := trainSummary(t, "--part-dir", dir, "--epochs", "2")
	if sum.Split != "frac:0.6:0.2" || sum.Recipe != "none" {
		t.Errorf("trained on split %q with recipe %q, want frac:0.6:0.2 and none", sum.Split, sum.Recipe)
	}
}

// TestTrainSplitAutoAmazonComputers: the real Amazon Computers ships no
// split; without a recipe's split, auto draws the stratified one.
func TestTrainSplitAutoAmazonComputers(t *testing.T) {
	datatest.Require(t, "gnn-benchmark/amazon_electronics_computers.npz")
	sum, stderr := trainSummary(t, "--dataset", "amazon-computers", "--recipe", "none", "--epochs", "2")
	if sum.Split != "frac:0.6:0.2" || !strings.Contains(stderr, "graft train: split frac:0.6:0.2: stratified 60/20/20 per class with seed 1, as amazon-computers ships no split") {
		t.Errorf("split %q, stderr:\n%s", sum.Split, stderr)
	}
}
