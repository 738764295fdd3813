package job

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/checkpoint"
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
		losses, sum, err := runLosses(s)
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

// A checkpoint of a graft that did not record --rebalance was trained
// without it, and resumes without it.
func TestResumeACheckpointWithoutTheRebalanceSetting(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), checkpointSpec(t, dir, 2)); err != nil {
		t.Fatal(err)
	}
	st, _, err := checkpoint.LoadLatest(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Config["rebalance"] != "off" {
		t.Fatalf("the checkpoint records rebalance %q, want off", st.Config["rebalance"])
	}
	delete(st.Config, "rebalance")
	if _, err := checkpoint.Save(dir, st, 0); err != nil {
		t.Fatal(err)
	}
	r := checkpointSpec(t, dir, 3)
	r.Resume, r.ResumeAllow = dir, []string{"epochs"}
	if sum, err := Run(context.Background(), r); err != nil || sum.Epochs != 3 {
		t.Fatalf("resuming: %+v, %v", sum, err)
	}
	r = checkpointSpec(t, dir, 4)
	r.Resume, r.ResumeAllow, r.Parts, r.Rebalance = dir, []string{"epochs", "parts"}, 2, 1.2
	if _, err := Run(context.Background(), r); err == nil || !strings.Contains(err.Error(), "--rebalance off (now 1.2)") {
		t.Fatalf("resuming with --rebalance: %v", err)
	}
}
