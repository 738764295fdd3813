package fullgraph

import (
	"context"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/nn"
)

var (
	coraOnce sync.Once
	cora     *dataset.Dataset
	coraErr  error
)

// coraData returns the embedded Cora with its public split, row-normalised.
func coraData(t testing.TB) (*dataset.Dataset, Data) {
	t.Helper()
	coraOnce.Do(func() { cora, coraErr = dataset.EmbeddedCora() })
	if coraErr != nil {
		t.Fatal(coraErr)
	}
	s, err := cora.Split("public", 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := FromDataset(cora, s, nn.Auto, true)
	if err != nil {
		t.Fatal(err)
	}
	return cora, d
}

func presetConfig(t testing.TB, model string, classes int, seed uint64) Config {
	t.Helper()
	p, err := PresetFor(model)
	if err != nil {
		t.Fatal(err)
	}
	return p.Config(model, classes, seed)
}

// TestCoraGCNAccuracy guards every kernel and layer on the training path:
// Kipf and Welling's GCN on Cora's public split must keep its accuracy.
func TestCoraGCNAccuracy(t *testing.T) {
	ds, data := coraData(t)
	seeds := []uint64{1, 2, 3}
	var sum float64
	for _, seed := range seeds {
		tr, err := New(presetConfig(t, "gcn", ds.NumClasses, seed), data)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: best epoch %d, val %.3f, test %.3f", seed, res.Best.Epoch, res.Best.ValAcc, res.Best.TestAcc)
		sum += res.Best.TestAcc
	}
	if mean := sum / float64(len(seeds)); mean < 0.79 {
		t.Errorf("mean test accuracy %.4f over %d seeds, want ≥ 0.79", mean, len(seeds))
	}
}
