package job

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Sampled training over parts resumes where it stopped: 2 epochs and a
// resume to 4 save the model 4 uninterrupted epochs save, bit for bit.
func TestDataParallelResumeEqualsUninterrupted(t *testing.T) {
	for _, grad := range []string{"", "topk:0.3", "powersgd:2"} {
		t.Run("grad-compress="+grad, func(t *testing.T) { testDataParallelResume(t, grad) })
	}
}

// testDataParallelResume is TestDataParallelResumeEqualsUninterrupted with
// the gradients compressed by grad, whose residuals the checkpoint keeps.
func testDataParallelResume(t *testing.T, grad string) {
	dir := t.TempDir()
	spec := func(ckpt string, epochs int, save string) Spec {
		s := checkpointSpec(t, ckpt, epochs)
		s.Sampler, s.BatchSize, s.Parts, s.GradCompress = "neighbor:5,5", 16, 3, grad
		s.Save = filepath.Join(dir, save)
		return s
	}
	whole := spec(filepath.Join(dir, "a"), 4, "whole.st")
	if _, err := Run(context.Background(), whole); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), spec(filepath.Join(dir, "b"), 2, "half.st")); err != nil {
		t.Fatal(err)
	}
	r := spec(filepath.Join(dir, "b"), 4, "resumed.st")
	r.Resume, r.ResumeAllow = filepath.Join(dir, "b"), []string{"epochs"}
	sum, err := Run(context.Background(), r)
	if err != nil || sum.Epochs != 4 || sum.BytesStructure == 0 || sum.GradCompress != cmpOr(grad, "none") {
		t.Fatalf("resumed: %+v, %v", sum, err)
	}
	if sum.BestEpoch <= 2 {
		t.Fatalf("the best epoch is %d, before the resume: the test would not compare the resumed epochs", sum.BestEpoch)
	}
	a, err1 := os.ReadFile(whole.Save)
	b, err2 := os.ReadFile(r.Save)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("the resumed run's model differs from the uninterrupted run's (%v, %v)", err1, err2)
	}
}

// Compressed gradients in sampled training over parts send what their
// method promises: top-k at 1% well under a tenth of the exact bytes.
func TestDataParallelCompressesGradients(t *testing.T) {
	bytesGrad := func(grad string) int64 {
		s := checkpointSpec(t, "", 2)
		s.CheckpointDir = ""
		s.Sampler, s.BatchSize, s.Parts, s.GradCompress = "neighbor:5,5", 16, 3, grad
		sum, err := Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return sum.BytesGrad
	}
	exact, topk := bytesGrad(""), bytesGrad("topk:0.01")
	if exact == 0 || topk*10 > exact {
		t.Fatalf("gradient bytes: %d exact, %d with topk:0.01; want at least 10x fewer", exact, topk)
	}
}
