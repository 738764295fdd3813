package fullgraph

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train/traintest"
)

// Once every worker of an in-process run has called Options.Cut, nothing
// of the run holds the whole graph or feature matrix: by the first
// epoch's end a weak pointer to each comes back nil after a collection,
// so a caller that lets them go at the last Cut (job's input does) frees
// them. A run that rebalances keeps both, to cut its parts anew, and
// calls no Cut.
func TestPartsLetTheWholeProblemGo(t *testing.T) {
	for _, rebalance := range []bool{false, true} {
		p := traintest.SBMProblem(t, 300)
		graphRef, featuresRef := weak.Make(p.Graph), weak.Make(p.Features.Dense)
		layout := partsOf(t, p.Graph, "multilevel", 2)
		var cuts atomic.Int32
		opts := Options{Cut: func() { cuts.Add(1) }}
		if rebalance {
			ml, err := partition.New("multilevel")
			if err != nil {
				t.Fatal(err)
			}
			opts.Rebalance = &Rebalance{Threshold: 1e9, Partitioner: ml}
		}
		var held []bool
		cfg := traintest.Config("sage", 2, 8)
		cfg.Epochs = 2
		_, _, err := RunInProcess(context.Background(), cfg, p, layout, opts, func(metrics.Epoch) error {
			runtime.GC()
			held = append(held, graphRef.Value() != nil, featuresRef.Value() != nil)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCuts, wantHeld := int32(2), false
		if rebalance {
			wantCuts, wantHeld = 0, true
		}
		if cuts.Load() != wantCuts {
			t.Errorf("rebalance %v: %d workers called Cut, want %d", rebalance, cuts.Load(), wantCuts)
		}
		for i, h := range held {
			if h != wantHeld {
				t.Errorf("rebalance %v: after epoch %d the whole %s held %v, want %v", rebalance, i/2+1, []string{"graph", "features"}[i%2], h, wantHeld)
			}
		}
	}
}

// partsOf is g's layout of k parts by method, seeded alike in every test.
func partsOf(t *testing.T, g *graph.Graph, method string, k int) *partition.Layout {
	t.Helper()
	p, err := partition.New(method)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := p.Partition(g, k, partition.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	return layout
}
