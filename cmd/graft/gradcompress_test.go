package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func gradSummary(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runGraft(t, append([]string{"train", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	return sum
}

// Top-k at 1% with error feedback sends over ten times fewer gradient bytes
// than the exact all-reduce and still learns Cora.
func TestTrainGradCompressBytes(t *testing.T) {
	exact := gradSummary(t, "--dataset", "cora", "--parts", "4", "--grad-compress", "none", "--epochs", "150")
	topk := gradSummary(t, "--dataset", "cora", "--parts", "4", "--grad-compress", "topk:0.01", "--epochs", "150")
	if exact["grad_compress"] != "none" || topk["grad_compress"] != "topk:0.01" {
		t.Errorf("grad_compress %v and %v", exact["grad_compress"], topk["grad_compress"])
	}
	eb, tb := exact["bytes_grad"].(float64), topk["bytes_grad"].(float64)
	if tb <= 0 || eb/tb < 10 {
		t.Errorf("bytes_grad %v with topk:0.01 against %v exact: %.1f× fewer, want at least 10×", tb, eb, eb/tb)
	}
	if acc := topk["test_acc"].(float64); acc < 0.7 {
		t.Errorf("topk:0.01 reached test accuracy %v", acc)
	}
	if exact["bytes_total"].(float64) != exact["bytes_fwd"].(float64)+exact["bytes_bwd"].(float64)+eb {
		t.Errorf("bytes_total is not the sum of halo and gradient bytes: %v", exact)
	}
}

// ,warmup:EPOCHS sends the exact all-reduce's gradient bytes in its first
// epochs (the trainer tells the method each step's epoch) and the
// compression's afterwards, and the summary names it.
func TestTrainGradCompressWarmup(t *testing.T) {
	// Each epoch's gradient bytes, and its loss and accuracies.
	type epoch struct {
		BytesGrad float64 `json:"bytes_grad"`
		Loss      float64 `json:"loss"`
		TrainAcc  float64 `json:"train_acc"`
		ValAcc    float64 `json:"val_acc"`
		TestAcc   float64 `json:"test_acc"`
	}
	perEpoch := func(spec string) []epoch {
		t.Helper()
		metrics := filepath.Join(t.TempDir(), "m.jsonl")
		sum := gradSummary(t, "--dataset", "cora", "--parts", "4", "--grad-compress", spec, "--epochs", "5", "--metrics", metrics)
		if sum["grad_compress"] != spec {
			t.Errorf("grad_compress %v, want %s", sum["grad_compress"], spec)
		}
		data, err := os.ReadFile(metrics)
		if err != nil {
			t.Fatal(err)
		}
		var epochs []epoch
		for line := range strings.Lines(string(data)) {
			var e epoch
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			epochs = append(epochs, e)
		}
		return epochs
	}
	bytesOf := func(es []epoch) []float64 {
		var b []float64
		for _, e := range es {
			b = append(b, e.BytesGrad)
		}
		return b
	}
	if _, help, _ := runGraft(t, "train", "-h"); !strings.Contains(help, ",warmup:EPOCHS to sum exactly for the first EPOCHS epochs") {
		t.Errorf("graft train -h does not describe ,warmup:EPOCHS")
	}
	exactRun, topkRun, warmRun := perEpoch("none"), perEpoch("topk:0.01"), perEpoch("topk:0.01,warmup:3")
	exact, topk, warm := bytesOf(exactRun), bytesOf(topkRun), bytesOf(warmRun)
	if len(warm) != 5 || !slices.Equal(warm[:3], exact[:3]) || !slices.Equal(warm[3:], topk[3:]) || warm[3] >= warm[2]/10 {
		t.Errorf("bytes_grad per epoch: %v with a warm-up of 3 epochs; %v exact, %v topk:0.01", warm, exact, topk)
	}
	// The warm-up's epochs train as exact gradients do, bit for bit: the
	// optimiser steps every coordinate, not top-k's catch-up steps.
	if len(exactRun) < 3 || !slices.Equal(warmRun[:3], exactRun[:3]) {
		t.Errorf("the warm-up's epochs %+v; exact gradients' %+v", warmRun[:min(3, len(warmRun))], exactRun[:min(3, len(exactRun))])
	}
}

func TestTrainGradCompressErrors(t *testing.T) {
	for _, spec := range []string{"zip", "topk", "topk:2", "powersgd:0", "quant8:1", "topk:0.1,fast", "topk:0.1,warmup:x", "topk:0.1,warmup:-1", "none,warmup:2"} {
		code, _, stderr := runGraft(t, "train", "--parts", "2", "--epochs", "1", "--grad-compress", spec)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "graft train: --grad-compress: ") {
			t.Errorf("--grad-compress %s: exit %d, %q", spec, code, stderr)
		}
	}
	code, _, stderr := runGraft(t, "train", "--epochs", "1", "--grad-compress", "topk:0.1")
	if code != 0 || !strings.Contains(stderr, "--grad-compress topk:0.1 has no effect with one worker") {
		t.Errorf("one worker: exit %d, %q", code, stderr)
	}
}

// A multi-process run with gradient compression checkpoints every worker's
// residuals and resumes to the uninterrupted run's parameters.
func TestTrainWorkersGradCompressResume(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	args := []string{"--patience", "0", "--grad-compress", "topk:0.05"}
	code, _, stderr := runGraft(t, append([]string{"train", "--parts", "2", "--epochs", "6", "--save", filepath.Join(dir, "whole.st")}, args...)...)
	if code != 0 {
		t.Fatalf("uninterrupted: exit %d: %s", code, stderr)
	}
	launch := []string{"launch", "--nproc", "2", "--", "train", "--start-timeout", "30s"}
	stdout, stderr, code, _ := graftProcess(t, append(append(launch, args...), "--epochs", "3", "--checkpoint-dir", ckpt, "--checkpoint-every", "3")...)
	if code != 0 {
		t.Fatalf("first half: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code, _ = graftProcess(t, append(append(launch, args...), "--epochs", "6", "--resume", ckpt, "--resume-allow", "epochs",
		"--save", filepath.Join(dir, "resumed.st"))...)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sameFile(t, filepath.Join(dir, "whole.st"), filepath.Join(dir, "resumed.st"))
}
