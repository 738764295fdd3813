package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graft-gnn/graft/metrics"
)

// graft train --sampler trains on mini-batches: the summary names the
// sampler and times training and evaluation apart, and every epoch's
// record counts its batches and where their time went.
func TestTrainSampled(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	mpath := filepath.Join(dir, "m.jsonl")
	code, stdout, stderr := runGraft(t, "train", "--model", "sage", "--lr", "0.01", "--weight-decay", "5e-4", "--sampler", "neighbor:10,5",
		"--batch-size", "32", "--epochs", "6", "--eval-every", "2", "--metrics", mpath, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "at chance") {
		t.Fatalf("a run that learns warned of chance: %s", stderr)
	}
	var sum struct {
		Sampler         string  `json:"sampler"`
		BatchSize       int     `json:"batch_size"`
		EvalMs          float64 `json:"eval_ms_median"`
		EpochMs         float64 `json:"epoch_ms_median"`
		EpochsPerSecond float64 `json:"epochs_per_second"`
		SeedsPerSecond  float64 `json:"seeds_per_second"`
		Epochs          int     `json:"epochs"`
		BestEpoch       int     `json:"best_epoch"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Sampler != "neighbor:10,5" || sum.BatchSize != 32 || sum.EvalMs <= 0 || sum.EpochMs <= 0 || sum.Epochs != 6 ||
		sum.EpochsPerSecond <= 0 || sum.SeedsPerSecond <= 0 || sum.BestEpoch%2 != 0 {
		t.Fatalf("summary %+v", sum)
	}
	f, err := os.Open(mpath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	epochs, err := metrics.ReadJSONLines(f)
	if err != nil || len(epochs) != 6 {
		t.Fatalf("%d records, %v", len(epochs), err)
	}
	for _, e := range epochs {
		// Cora's public split: 140 training nodes in batches of 32.
		if e.Batches != 5 || e.SampleSeconds <= 0 || e.GatherSeconds <= 0 || e.InputNodes < 32 || e.InputEdges <= 0 ||
			(e.EvalSeconds > 0) != (e.Epoch%2 == 0) {
			t.Fatalf("epoch record %+v", e)
		}
	}
}

func TestTrainSampledErrors(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sampler", "neighbor:10"}, "one per layer"},
		{[]string{"--sampler", "walk:3"}, "unknown sampler"},
		{[]string{"--sampler", "walk:3", "--parts", "2"}, "unknown sampler"},
		{[]string{"--sampler", "cluster:4:5", "--parts", "2"}, "5 clusters per batch of 4; want 1 to 4"},
		{[]string{"--sampler", "saint-rw:40", "--parts", "2"}, "want ROOTS:LENGTH"},
		{[]string{"--sampler", "neighbor:10", "--parts", "2"}, "one per layer"},
		{[]string{"--sampler", "neighbor:10,5", "--parts", "2", "--batch-size", "0"}, "--batch-size 0"},
		{[]string{"--sampler", "neighbor:10,5", "--parts", "2", "--compress", "truncate", "--schedule", "adaptive"}, "adapts to the validation loss"},
		{[]string{"--sampler", "neighbor:10,5", "--parts", "2", "--eval-sampler", "neighbor:5,5"}, "drop --eval-sampler"},
		{[]string{"--sampler", "neighbor:10,5", "--batch-size", "0"}, "--batch-size 0"},
		{[]string{"--eval-every", "0"}, "graft train: --eval-every 0: want 1 or more (evaluate every K epochs)"},
		{[]string{"--accumulate", "0"}, "graft train: --accumulate 0: want 1 or more (micro-batches per optimiser step)"},
		{[]string{"--sampler", "neighbor:10,5", "--precision", "fp16"}, `--precision "fp16": want fp32 or bf16`},
	} {
		code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "2"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Long mini-batch epochs say how far they have got: a line about the
// epoch's batches every batchEvery (zero here: after every batch but the
// last).
func TestTrainSampledReportsBatchProgress(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	defer func(d time.Duration) { batchEvery = d }(batchEvery)
	batchEvery = 0
	// One process; and two workers of 35 seeds each, whose batches are as
	// many.
	for _, parts := range []string{"1", "2"} {
		batch := map[string]string{"1": "70", "2": "35"}[parts]
		code, _, stderr := runGraft(t, "train", "--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", batch, "--epochs", "2", "--parts", parts)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, want := range []string{"epoch 1: batch 1/2,", "epoch 2: batch 1/2,"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("--parts %s: stderr lacks %q:\n%s", parts, want, stderr)
			}
		}
		if strings.Contains(stderr, "batch 2/2") {
			t.Errorf("--parts %s: a line for an epoch's last batch:\n%s", parts, stderr)
		}
	}
}

// --eval-sampler evaluates a mini-batch run on sampled batches, and is
// refused without --sampler.
func TestTrainEvalSampler(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	code, stdout, stderr := runGraft(t, "train", "--model", "sage", "--sampler", "neighbor:5,5", "--eval-sampler", "neighbor:10,10", "--batch-size", "64", "--epochs", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		EvalSampler string  `json:"eval_sampler"`
		TestAcc     float64 `json:"test_acc"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.EvalSampler != "neighbor:10,10" || sum.TestAcc <= 0 {
		t.Errorf("summary %+v", sum)
	}
	if code, _, stderr := runGraft(t, "train", "--eval-sampler", "neighbor:10,10", "--epochs", "1"); code != 2 || !strings.Contains(stderr, "--sampler") {
		t.Errorf("--eval-sampler without --sampler: exit %d, %s", code, stderr)
	}
}

// --precision bf16 trains a mini-batch run on bf16 features to the
// accuracy of float32 on an easy graph, and the summary says which
// precision ran.
func TestTrainSampledBF16(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	acc := map[string]float64{}
	for _, prec := range []string{"fp32", "bf16"} {
		code, stdout, stderr := runGraft(t, "train", "--dataset", "sbm:3000:10:16:4:7", "--model", "sage", "--sampler", "neighbor:5,5",
			"--batch-size", "64", "--epochs", "10", "--precision", prec, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", prec, code, stderr)
		}
		var sum struct {
			Precision string  `json:"precision"`
			TestAcc   float64 `json:"test_acc"`
		}
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Precision != prec {
			t.Fatalf("summary's precision %q, ran %s", sum.Precision, prec)
		}
		acc[prec] = sum.TestAcc
	}
	if acc["fp32"] < 0.75 || math.Abs(acc["bf16"]-acc["fp32"]) > 0.02 {
		t.Fatalf("test accuracy %.4f at bf16, %.4f at fp32", acc["bf16"], acc["fp32"])
	}
}

// The precision is part of a checkpointed run's trajectory: resuming a bf16
// run at fp32 is refused, and the text summary names bf16.
func TestTrainSampledBF16Resume(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	args := []string{"train", "--dataset", "sbm:1000:10:16:4:7", "--model", "sage", "--sampler", "neighbor:5,5", "--precision", "bf16"}
	code, stdout, stderr := runGraft(t, append(args, "--epochs", "1", "--checkpoint-dir", dir, "--checkpoint-every", "1")...)
	if code != 0 || !strings.Contains(stdout, "precision bf16") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	resume := append(args[:len(args)-2], "--epochs", "2", "--resume", dir, "--resume-allow", "epochs")
	if code, _, stderr := runGraft(t, resume...); code == 0 || !strings.Contains(stderr, "--precision bf16 (now fp32)") {
		t.Fatalf("resuming a bf16 run at fp32: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runGraft(t, append(resume, "--precision", "bf16")...); code != 0 {
		t.Fatalf("resuming at bf16: exit %d: %s", code, stderr)
	}
}

// A run whose model predicts no better than chance says so once, with what
// to try, and its metrics show why: five epochs whose loss is not below the
// labels' entropy (ln 8 for the eight balanced classes of this SBM) at the
// largest class's accuracy. A step size of 0.5 makes SAGE's outputs
// collapse.
func TestTrainWarnsOfEpochsAtChance(t *testing.T) {
	mpath := filepath.Join(t.TempDir(), "m.jsonl")
	code, _, stderr := runGraft(t, "train", "--dataset", "sbm:3000:20:32:8", "--model", "sage", "--layers", "3", "--hidden", "64",
		"--lr", "0.5", "--epochs", "8", "--sampler", "neighbor:5,5,5", "--batch-size", "64", "--metrics", mpath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "at chance"); n != 1 || !strings.Contains(stderr, "--lr") {
		t.Fatalf("%d chance warnings in %s", n, stderr)
	}
	f, err := os.Open(mpath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	epochs, err := metrics.ReadJSONLines(f)
	if err != nil {
		t.Fatal(err)
	}
	var run []float64
	for _, e := range epochs {
		if e.Loss >= 0.999*math.Log(8) && e.TrainAcc <= 0.125+0.01+1e-3 {
			run = append(run, e.Loss)
		} else {
			run = nil
		}
		if n := len(run); n >= 5 && run[n-1] >= 0.99*run[n-5] {
			return
		}
	}
	t.Fatalf("warned, but the metrics show no five epochs at chance without progress: %+v", epochs)
}

// Runs that learn slowly are not at chance: a small step size whose
// evaluations come every ten epochs (the epochs between carry no training
// accuracy), and a loss that falls from above the labels' entropy.
func TestTrainDoesNotWarnOfSlowRuns(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	for _, args := range [][]string{
		{"train", "--lr", "0.001", "--eval-every", "10", "--epochs", "30"},
		{"train", "--model", "sage", "--lr", "0.001", "--epochs", "30"},
	} {
		code, _, stderr := runGraft(t, args...)
		if code != 0 || strings.Contains(stderr, "at chance") {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
}
