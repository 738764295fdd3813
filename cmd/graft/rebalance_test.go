package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/train/fullgraph"
)

func TestTrainRebalanceRefusals(t *testing.T) {
	assignment := filepath.Join(t.TempDir(), "cora.part.2")
	var b strings.Builder
	for v := range 2708 {
		b.WriteString([]string{"0\n", "1\n"}[v%2])
	}
	if err := os.WriteFile(assignment, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--rebalance"}, "add --parts N (2 or more)"},
		{[]string{"--rebalance=1", "--parts", "2"}, "want a max/mean threshold above 1"},
		{[]string{"--rebalance=fast", "--parts", "2"}, "want a max/mean threshold above 1"},
		{[]string{"--rebalance", "1.25", "--parts", "2"}, "--rebalance=1.25"},
		{[]string{"--rebalance", "--parts", "2", "--sampler", "neighbor:5,5"}, "for full-graph training"},
		{[]string{"--rebalance", "--parts", "2", "--sampler", "neighbor:5,5", "--mode", "async"}, "not for parameter-server training"},
		{[]string{"--rebalance", "--parts", "2", "--compress", "delta"}, "keeps state per pair of workers"},
		{[]string{"--rebalance", "--parts", "2", "--compress", "entropy:delta:2"}, "keeps state per pair of workers"},
		{[]string{"--rebalance", "--parts", "2", "--compress", "entropy:quant9"}, "unknown compressor"},
		{[]string{"--rebalance", "--parts", "2", "--partition", assignment}, "assignment file " + assignment + " cannot be recomputed"},
		{[]string{"--rebalance", "--part-dir", t.TempDir()}, "no worker of --part-dir"},
	}
	for _, tt := range tests {
		code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "2"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") > 2 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// epochLosses reads the losses of a --metrics file.
func epochLosses(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var losses []float64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct{ Loss float64 }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, m.Loss)
	}
	return losses
}

// sameLosses checks that a rebalanced run trained the model of the run
// that was not, to float rounding.
func sameLosses(t *testing.T, want, got string) {
	t.Helper()
	w, g := epochLosses(t, want), epochLosses(t, got)
	if len(w) == 0 || len(w) != len(g) {
		t.Fatalf("%d epochs in %s, %d in %s", len(w), want, len(g), got)
	}
	for e := range w {
		if math.Abs(w[e]-g[e]) > 1e-5*math.Max(1, math.Abs(w[e])) {
			t.Errorf("epoch %d loss %v rebalanced, %v not", e+1, g[e], w[e])
		}
	}
}

type rebalanceSummary struct {
	Rebalances *[]fullgraph.Record `json:"rebalances"`
	Balance    struct {
		Size struct{ Imbalance float64 } `json:"size"`
	} `json:"balance"`
}

// checkRebalances checks the summary's rebalances of a run whose threshold
// (just above 1) any measured imbalance exceeds: one after epoch 4 (epoch
// 1 is not measured, 2 to 4 are), a window of three epochs each, and the
// parts' sizes of the last one in the balance.
func checkRebalances(t *testing.T, stdout string) []fullgraph.Record {
	t.Helper()
	var sum rebalanceSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if sum.Rebalances == nil || len(*sum.Rebalances) == 0 {
		t.Fatalf("no rebalances in %s", stdout)
	}
	rs := *sum.Rebalances
	if r := rs[0]; r.Epoch != 4 || len(r.WindowBefore) != 2 || r.WindowBefore[0] != 2 || r.WindowBefore[1] != 4 || !(r.ImbalanceBefore > 1) {
		t.Errorf("first rebalance %+v, want one after epoch 4 measured over epochs 2-4", r)
	}
	for i, r := range rs {
		if r.WindowAfter != nil && (r.WindowAfter[0] != r.Epoch+2 || r.WindowAfter[1] != r.Epoch+4 || !(r.ImbalanceAfter >= 1)) {
			t.Errorf("rebalance %d: %+v, want the imbalance after it measured over epochs %d-%d", i, r, r.Epoch+2, r.Epoch+4)
		}
	}
	t.Logf("rebalances %+v", rs)
	last := rs[len(rs)-1]
	sizes := make([]float64, len(last.PartNodes))
	for p, n := range last.PartNodes {
		sizes[p] = float64(n)
	}
	if want := fullgraph.Imbalance(sizes); math.Abs(sum.Balance.Size.Imbalance-want) > 1e-12 {
		t.Errorf("balance's part size imbalance %v; the last rebalance's parts %v have %v", sum.Balance.Size.Imbalance, last.PartNodes, want)
	}
	return rs
}

// --rebalance reports its re-partitions, and the rebalanced run trains the
// model of the run that is not.
func TestTrainRebalanceReportsAndTrainsTheSameModel(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--dataset", "rmat:11:20000:8:3", "--parts", "4", "--partition", "multilevel", "--model", "sage",
		"--epochs", "12", "--json"}
	code, stdout, stderr := runGraft(t, append(args, "--metrics", filepath.Join(dir, "plain.jsonl"))...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "rebalances") {
		t.Errorf("a run without --rebalance reports rebalances: %s", stdout)
	}
	code, stdout, stderr = runGraft(t, append(args, "--rebalance=1.000001", "--metrics", filepath.Join(dir, "rebalanced.jsonl"))...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rs := checkRebalances(t, stdout)
	if rs[0].NodesMoved > 0 && !strings.Contains(stderr, "graft train: rebalanced after epoch 4: compute imbalance") {
		t.Errorf("stderr does not say the rebalance:\n%s", stderr)
	}
	sameLosses(t, filepath.Join(dir, "plain.jsonl"), filepath.Join(dir, "rebalanced.jsonl"))

	// A threshold no run reaches: the list is there, and empty.
	code, stdout, stderr = runGraft(t, "train", "--parts", "2", "--rebalance=1000", "--epochs", "5", "--json")
	if code != 0 || !strings.Contains(stdout, `"rebalances":[]`) {
		t.Errorf("exit %d, summary %s\n%s", code, stdout, stderr)
	}
}

// Under graft launch every process takes the rebalance that rank 0
// computes, over TCP, and they train the model one process trains.
func TestTrainProcessesRebalance(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--dataset", "rmat:11:20000:8:3", "--partition", "multilevel", "--model", "gcn", "--epochs", "10", "--json"}
	if code, _, stderr := runGraft(t, append(args, "--parts", "2", "--metrics", filepath.Join(dir, "in.jsonl"))...); code != 0 {
		t.Fatalf("in-process: exit %d: %s", code, stderr)
	}
	launch := append([]string{"launch", "--nproc", "2", "--"}, args...)
	launch = append(launch, "--rebalance=1.000001", "--start-timeout", "30s", "--metrics", filepath.Join(dir, "mp.jsonl"))
	stdout, stderr, code, _ := graftProcess(t, launch...)
	if code != 0 {
		t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Rank 0's standard output, the summary, passes as it is.
	checkRebalances(t, stdout)
	sameLosses(t, filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "mp.jsonl"))
}
