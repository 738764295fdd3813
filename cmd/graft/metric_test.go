package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/datatest"
)

// trainJSON runs graft train with args and --json and decodes the summary.
func trainJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runGraft(t, append(append([]string{"train"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	return sum
}

// Macro-F1 is reported on every run; ROC-AUC only on a binary task; and
// --metric picks the one model selection follows.
func TestTrainMetrics(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	sum := trainJSON(t, "--epochs", "5", "--metric", "f1")
	f1, ok := sum["test_macro_f1"].(float64)
	if sum["metric"] != "f1" || !ok || f1 <= 0 || f1 > 1 || sum["test_auc"] != nil {
		t.Errorf("cora with --metric f1: metric %v, test_macro_f1 %v, test_auc %v", sum["metric"], sum["test_macro_f1"], sum["test_auc"])
	}
	if sum := trainJSON(t, "--epochs", "3"); sum["metric"] != "acc" || sum["test_macro_f1"] == nil {
		t.Errorf("default metric %v, test_macro_f1 %v", sum["metric"], sum["test_macro_f1"])
	}

	edges, labels, features := twoCommunities(t) // two classes
	sum = trainJSON(t, "--dataset", edges, "--labels", labels, "--features", features,
		"--split", "frac:0.5:0.25", "--epochs", "20", "--metric", "auc")
	auc, ok := sum["test_auc"].(float64)
	if sum["metric"] != "auc" || !ok || auc < 0 || auc > 1 || sum["best_val_auc"] == nil {
		t.Errorf("binary task with --metric auc: metric %v, test_auc %v, best_val_auc %v", sum["metric"], sum["test_auc"], sum["best_val_auc"])
	}
}

// A binary task's test set of one class has no ROC-AUC: the summary
// leaves test_auc out (not 0 beside an accuracy of 1), keeps the
// validation set's, and stderr says so once.
func TestTrainAUCUndefinedForOneClass(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	edges, labels, features := twoCommunities(t) // a0…a9 red, b0…b9 blue
	var split strings.Builder
	for _, c := range []string{"a", "b"} {
		for i := range 10 {
			switch {
			case i < 5:
				fmt.Fprintf(&split, "%s%d,train\n", c, i)
			case i < 7:
				fmt.Fprintf(&split, "%s%d,val\n", c, i)
			case c == "a":
				fmt.Fprintf(&split, "%s%d,test\n", c, i)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "split.csv")
	if err := os.WriteFile(path, []byte(split.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features, "--split", "file:"+path, "--epochs", "10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	_, hasTest := sum["test_auc"]
	if val, ok := sum["best_val_auc"].(float64); hasTest || !ok || val < 0 || val > 1 {
		t.Errorf("test_auc %v (given: %v), best_val_auc %v; want test_auc left out and the validation set's", sum["test_auc"], hasTest, sum["best_val_auc"])
	}
	if n := strings.Count(stderr, "ROC-AUC is undefined"); n != 1 || !strings.Contains(stderr, "the test set does not hold nodes of both classes") {
		t.Errorf("stderr says %d times that the AUC is undefined:\n%s", n, stderr)
	}
	// With both classes in every set, nothing is said.
	if code, _, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features, "--split", "frac:0.5:0.25", "--epochs", "3"); code != 0 || strings.Contains(stderr, "undefined") {
		t.Errorf("both classes: exit %d, stderr %q", code, stderr)
	}
}

func TestTrainMetricErrors(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--metric", "auc", "--epochs", "2"}, "--metric auc: dataset cora has 7 classes, and ROC-AUC is for binary tasks"},
		{[]string{"train", "--metric", "roc"}, `--metric "roc": want acc, auc or f1`},
	} {
		code, _, stderr := runGraft(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Tolokers, the binary benchmark that reports ROC-AUC.
func TestTrainTolokersAUC(t *testing.T) {
	datatest.Require(t, "heterophilous/tolokers.npz")
	sum := trainJSON(t, "--dataset", "tolokers", "--epochs", "50", "--metric", "auc")
	if auc, ok := sum["test_auc"].(float64); !ok || auc <= 0.55 || auc > 1 {
		t.Errorf("tolokers test_auc %v, want above chance", sum["test_auc"])
	}
}

// Over several workers each holds some of the scores: ROC-AUC is still
// reported (train's TestAUCGatheredOverWorkers checks the gathering).
func TestTrainMetricsAcrossWorkers(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	sum := trainJSON(t, "--dataset", edges, "--labels", labels, "--features", features,
		"--split", "frac:0.5:0.25", "--epochs", "10", "--metric", "auc", "--parts", "3")
	for _, k := range []string{"test_auc", "best_val_auc", "test_macro_f1"} {
		if v, ok := sum[k].(float64); !ok || v < 0 || v > 1 {
			t.Errorf("--parts 3: %s %v", k, sum[k])
		}
	}
}
