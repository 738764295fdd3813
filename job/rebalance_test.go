package job

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
)

// modelTimes times every worker as 1 µs per node and 0.1 µs per adjacency
// entry it holds, so that a run's rebalancing does not depend on the
// machine.
func modelTimes(_ int, layout *partition.Layout, _ []float64) []float64 {
	t := make([]float64, layout.K)
	for p := range layout.Parts {
		t[p] = 1e-6*float64(len(layout.Parts[p].Owned)) + 1e-7*float64(layout.Parts[p].Local.NNZ())
	}
	return t
}

// A run resumed from the checkpoint of a rebalanced run continues on the
// rebalanced partition and equals the uninterrupted run bit for bit; its
// summary lists the rebalance made before the checkpoint.
func TestResumeAfterRebalance(t *testing.T) {
	dir := t.TempDir()
	run := func(epochs int, resume bool, save string) ([]float64, Summary) {
		t.Helper()
		s := checkpointSpec(t, dir, epochs)
		s.Save = save
		s.Dataset, s.Split = "rmat:11:20000:8:3", ""
		s.Parts, s.Partition, s.Rebalance, s.measure = 3, "multilevel", 1.1, modelTimes
		switch {
		case resume:
			s.Resume, s.ResumeAllow = dir, []string{"epochs"}
		case epochs != 5:
			s.CheckpointDir = t.TempDir()
		}
		var losses []float64
		s.Progress = func(e metrics.Epoch) { losses = append(losses, e.Loss) }
		sum, err := Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return losses, sum
	}
	_, first := run(5, false, "")
	if first.Rebalances == nil || len(*first.Rebalances) != 1 || (*first.Rebalances)[0].Epoch != 4 || (*first.Rebalances)[0].NodesMoved == 0 {
		t.Fatalf("rebalances of the first 5 epochs: %+v, want one after epoch 4", first.Rebalances)
	}
	out := t.TempDir()
	resumed, rsum := run(9, true, filepath.Join(out, "resumed.safetensors"))
	whole, wsum := run(9, false, filepath.Join(out, "whole.safetensors"))
	if len(resumed) != 4 || len(whole) != 9 {
		t.Fatalf("%d resumed epochs, %d uninterrupted", len(resumed), len(whole))
	}
	for i, l := range resumed {
		if l != whole[5+i] {
			t.Errorf("epoch %d: loss %v resumed, %v uninterrupted", 6+i, l, whole[5+i])
		}
	}
	for _, sum := range []Summary{rsum, wsum} {
		if sum.Rebalances == nil || len(*sum.Rebalances) != 1 || (*sum.Rebalances)[0].Epoch != 4 {
			t.Errorf("rebalances %+v, want the one after epoch 4", sum.Rebalances)
		}
	}
	a, err1 := os.ReadFile(filepath.Join(out, "resumed.safetensors"))
	b, err2 := os.ReadFile(filepath.Join(out, "whole.safetensors"))
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Errorf("the resumed run saved other parameters than the uninterrupted one (%v, %v)", err1, err2)
	}
	if rsum.Balance == nil || wsum.Balance == nil || rsum.Balance.Size != wsum.Balance.Size {
		t.Errorf("part sizes resumed %+v, uninterrupted %+v", rsum.Balance, wsum.Balance)
	}
}
