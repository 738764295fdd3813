package dataparallel

import (
	"context"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/traintest"
)

// Each epoch's record gives the mean input rows and block entries of its
// batches, and the time the model waited for them: one worker holding the
// whole graph counts what the single-process stepper counts on the same
// seeds' batches; and over several workers each record's wait, the
// slowest worker's sampling and fetching together, is at least its
// sampling and its fetching.
func TestEpochRecordsCountEdgesAndWait(t *testing.T) {
	p := traintest.SBMProblem(t, 200)
	cfg := testConfig("sage")
	const batch, epochs = 20, 2
	cfg.Epochs, cfg.Patience = epochs, 0
	records := func(k int) []metrics.Epoch {
		var out []metrics.Epoch
		err := withTimeout(t, func() error {
			_, _, err := RunInProcess(context.Background(), cfg, p, randomLayout(t, p, k), Options{Sampler: "neighbor:4,4", BatchSize: batch},
				func(e metrics.Epoch) error { out = append(out, e); return nil })
			return err
		})
		if err != nil || len(out) != epochs {
			t.Fatalf("%d workers: %d records, %v", k, len(out), err)
		}
		return out
	}

	// The single process on the one part's batches, its stepper's figures
	// taken each epoch.
	parts := Parts(p, classes, randomLayout(t, p, 1))
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		t.Fatal(err)
	}
	n := sample.NewNeighbor(sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: batch, Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed}, []int{4, 4})
	u := unionSampler{size: batch, seed: cfg.Model.Seed, n: func(epoch, _ int, seeds []int32, b *sample.Batch) error { return n.SampleSeeds(epoch, seeds, b) }}
	var tr []int32
	for _, r := range parts[0].Train {
		tr = append(tr, parts[0].Part.Owned[r])
	}
	u.trains = [][]int32{tr}
	s, err := minibatch.New(cfg, p, u, minibatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loop, err := train.New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range records(1) {
		for first := range u.Batches() {
			if _, err := loop.Step(i+1, first); err != nil {
				t.Fatal(err)
			}
		}
		st := s.TakeStats()
		wantNodes, wantEdges := float64(st.InputNodes)/float64(st.Batches), float64(st.InputEdges)/float64(st.Batches)
		if e.Batches != st.Batches || e.InputNodes != wantNodes || e.InputEdges != wantEdges || e.InputEdges <= 0 {
			t.Errorf("epoch %d: %d batches, %v input rows and %v entries a batch; the one process's %d, %v and %v", i+1, e.Batches, e.InputNodes, e.InputEdges, st.Batches, wantNodes, wantEdges)
		}
		if e.WaitSeconds <= 0 {
			t.Errorf("epoch %d: waited %v s", i+1, e.WaitSeconds)
		}
	}
	for _, e := range records(3) {
		if e.InputEdges <= 0 || e.WaitSeconds < e.SampleSeconds || e.WaitSeconds < e.GatherSeconds || e.GatherSeconds <= 0 {
			t.Errorf("epoch %d over 3 workers: %v entries a batch, waited %v s, sampled %v s, gathered %v s", e.Epoch, e.InputEdges, e.WaitSeconds, e.SampleSeconds, e.GatherSeconds)
		}
	}
}
