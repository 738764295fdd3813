package minibatch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/traintest"
)

// The gather copies exactly the rows asked for, in order, repeats
// included, whatever the rows' width (one prefetch group of many rows, or
// rows wider than a group) and the batch's size (the parallel split).
func TestGatherCopiesTheRows(t *testing.T) {
	withEachGroupSize(t, testGatherCopiesTheRows)
}

// withEachGroupSize runs test with the prefetch groups of AMD's cores and
// of Intel's, whichever this CPU is.
func withEachGroupSize(t *testing.T, test func(*testing.T)) {
	saved := gatherGroupBytes
	defer func() { gatherGroupBytes = saved }()
	for _, bytes := range []int{12 << 10, 2560} {
		gatherGroupBytes = bytes
		t.Run(fmt.Sprintf("groups-of-%dB", bytes), test)
	}
}

func testGatherCopiesTheRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ rows, cols, batch int }{{50, 7, 13}, {5000, 100, 4000}, {10, 1, 10}, {40, 5000, 30}, {3, 3, 0}} {
		x := tensor.New(tc.rows, tc.cols)
		for i := range x.Data {
			x.Data[i] = rng.Float32()
		}
		ids := make([]int32, tc.batch)
		for i := range ids {
			ids[i] = int32(rng.IntN(tc.rows))
		}
		var g gatherer
		got := g.gather(nn.DenseFeatures(x), ids).Dense
		if got.Rows != tc.batch || got.Cols != tc.cols || !slices.Equal(got.Data, x.SelectRows(ids).Data) {
			t.Fatalf("%+v: the gathered rows are not x's rows ids", tc)
		}
	}
}

// A batch whose input rows the model reads where they lie (nn.Selected:
// a first GCN or SAGE layer that aggregates first, on float32 or bf16
// rows, with or without a dropout on the input) trains bit for bit as the
// same batch gathered, and gathers only its first block's destinations,
// and those only for SAGE, which reads them.
func TestSelectedInputTrainsAsGathered(t *testing.T) {
	p := traintest.SBMProblem(t, 600)
	for _, tc := range []struct {
		model   string
		dropout float64
		bf16    bool
		want    bool
	}{{"sage", 0, false, true}, {"gcn", 0, false, true}, {"sage", 0, true, true}, {"gcn", 0, true, true},
		{"sage", 0.5, false, true}, {"gcn", 0.5, false, true}, {"sage", 0.5, true, true}, {"gcn", 0.5, true, true}} {
		t.Run(fmt.Sprintf("%s/dropout%v/bf16=%v", tc.model, tc.dropout, tc.bf16), func(t *testing.T) {
			cfg := traintest.Config(tc.model, 2, 5)
			cfg.Model.Dropout, cfg.Model.Hidden = tc.dropout, 32
			q := p
			if tc.bf16 {
				q = p.WithBF16Features()
			}
			run := func(selected bool) (outcome, int, Stats) {
				agg, err := sample.AggregationOf(tc.model)
				if err != nil {
					t.Fatal(err)
				}
				sampler, err := sample.New("neighbor:5,5", sample.Config{Graph: q.Graph, Train: q.Train, BatchSize: 32, Layers: 2, Aggregation: agg, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				s, err := New(cfg, q, sampler, Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if !selected {
					s.feed.reads = nil
				}
				loop, err := train.New(cfg, s)
				if err != nil {
					t.Fatal(err)
				}
				var o outcome
				left := 0
				for epoch := 1; epoch <= 2; epoch++ {
					for b := range s.Batches() {
						loss, err := loop.Step(epoch, b)
						if err != nil {
							t.Fatal(err)
						}
						o.losses = append(o.losses, loss)
						for _, p := range s.pending {
							if sel := p.x.Selected; sel != nil {
								left++
								if len(sel.IDs) != len(p.batch.Input) {
									t.Fatalf("selected rows: %d ids for %d inputs", len(sel.IDs), len(p.batch.Input))
								}
								if tc.model == "gcn" && sel.Head != nil {
									t.Fatalf("selected rows: GCN's batch gathered its destinations' rows, which it does not read")
								}
								if tc.model == "sage" && (sel.Head == nil || sel.Head.Rows != p.batch.Blocks[0].NumDst) {
									t.Fatalf("selected rows: %v gathered for %d destinations", sel.Head, p.batch.Blocks[0].NumDst)
								}
							}
						}
					}
				}
				return collect(t, train.Result{}, loop, nil, &o), left, s.TakeStats()
			}
			gathered, none, gst := run(false)
			got, left, st := run(true)
			if none != 0 || (left > 0) != tc.want {
				t.Fatalf("%d batches left their rows in place (%d with the model's answer off), want some: %v", left, none, tc.want)
			}
			if !slices.Equal(got.losses, gathered.losses) || !slices.Equal(got.params, gathered.params) {
				t.Fatalf("losses %v, gathered %v", got.losses, gathered.losses)
			}
			if st.GatheredBytes != gst.GatheredBytes || st.Flops != gst.Flops {
				t.Errorf("the floor's figures changed: %v bytes, %v flops; gathered %v, %v", st.GatheredBytes, st.Flops, gst.GatheredBytes, gst.Flops)
			}
		})
	}
}
