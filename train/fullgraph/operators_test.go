package fullgraph

import (
	"fmt"
	"math"
	"testing"

	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
)

// Parts holding only the operators their model reads train bit for bit as
// parts holding all three: the same loss every epoch and the same final
// parameters, with dropout on, for GCN, SAGE and GAT.
func TestPartsWithTheirOperatorsTrainAsWithAll(t *testing.T) {
	s := newSBMTask(t, 240, 5)
	for _, model := range []string{"gcn", "sage", "gat", "mlp"} {
		for _, k := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d", model, k), func(t *testing.T) {
				cfg := equivalenceConfig(model, s.classes)
				cfg.Epochs = 4
				want := runParts(t, s, cfg, "multilevel", k, true)
				got := runParts(t, s, cfg, "multilevel", k, false)
				if len(got.losses) != cfg.Epochs || len(want.losses) != cfg.Epochs {
					t.Fatalf("%d and %d epochs, want %d", len(got.losses), len(want.losses), cfg.Epochs)
				}
				for e := range want.losses {
					if math.Float64bits(got.losses[e]) != math.Float64bits(want.losses[e]) {
						t.Fatalf("epoch %d loss %v, with every operator %v", e+1, got.losses[e], want.losses[e])
					}
				}
				for i := range want.params {
					for j := range want.params[i] {
						if math.Float32bits(got.params[i][j]) != math.Float32bits(want.params[i][j]) {
							t.Fatalf("parameter %d[%d] %v, with every operator %v", i, j, got.params[i][j], want.params[i][j])
						}
					}
				}
			})
		}
	}
}

// A part's block holds only the operators its model reads, whether built
// from the whole graph (PartOf) or from a stored part (StoredData): SAGE
// and the MLP the mean alone, GCN its operator (serving as the self-loop
// pattern, no copy of it) and no mean, GAT the self-loop pattern alone.
// The memory account counts what each built (the mean's values, which
// share the part's adjacency's pattern; the self-loop pattern, with room
// for a loop in every row, and GCN's values) until the block's Release.
func TestPartsHoldOnlyTheOperatorsTheirModelReads(t *testing.T) {
	held := func() int64 { return memacct.Held(memacct.Operators) }
	const k = 3
	s, p, layout := storedTask(t, k, false)
	for _, model := range []string{"gcn", "sage", "gat", "mlp"} {
		agg, err := sample.AggregationOf(model)
		if err != nil {
			t.Fatal(err)
		}
		for i := range layout.Parts {
			part := &layout.Parts[i]
			base := held()
			d, err := PartOf(s.g, s.x, s.labels, s.train, s.val, s.test, part, agg, nil)
			if err != nil {
				t.Fatal(err)
			}
			counted := map[string]int64{"PartOf": held() - base}
			sp := partstore.Build(source(p, s.classes), part, partstore.Fingerprint(layout))
			before := held()
			ds, err := StoredData(sp, agg, nil)
			if err != nil {
				t.Fatal(err)
			}
			counted["StoredData"] = held() - before
			for from, b := range map[string]*nn.Block{"PartOf": d.Block, "StoredData": ds.Block} {
				ops := b.Operators()
				rows, nnz := int64(part.Local.Rows), int64(part.Local.NNZ())
				want := 4 * nnz // the mean's values
				if model == "gcn" || model == "gat" {
					want = 8*(rows+1) + 4*(nnz+rows) // the self-loop pattern
					if model == "gcn" {
						want += 4 * int64(ops.GCN.NNZ())
					}
				}
				if counted[from] != want {
					t.Errorf("%s part %d from %s: %d bytes of operators counted, want %d", model, i, from, counted[from], want)
				}
				var bad string
				switch model {
				case "gcn":
					if ops.GCN == nil || ops.Mean != nil || ops.Loops != ops.GCN {
						bad = "want GCN alone"
					}
				case "sage", "mlp":
					if ops.Mean == nil || ops.GCN != nil || ops.Loops != nil {
						bad = "want Mean alone"
					}
				case "gat":
					if ops.Loops == nil || ops.GCN != nil || ops.Mean != nil {
						bad = "want Loops alone"
					}
				}
				if bad != "" {
					t.Errorf("%s part %d from %s: Loops %v, GCN %v, Mean %v: %s", model, i, from,
						ops.Loops != nil, ops.GCN != nil, ops.Mean != nil, bad)
				}
				b.Release()
			}
			if held() != base {
				t.Errorf("%s part %d: %d bytes of operators counted after Release", model, i, held()-base)
			}
		}
	}
}
