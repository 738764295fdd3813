package fullgraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/memacct"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
)

// "The cost model recovers the per-node and per-edge cost that generated
// the workers' times", and keeps both coefficients non-negative.
func TestFitCostRecoversTheCostThatMadeTheTimes(t *testing.T) {
	nodes := []float64{1000, 1200, 900, 1500}
	edges := []float64{9000, 4000, 15000, 7000}
	for _, want := range []Cost{{2e-6, 5e-7}, {0, 3e-7}, {4e-6, 0}, {1e-3, 1e-9}} {
		seconds := make([]float64, len(nodes))
		for w := range nodes {
			seconds[w] = want.PerNode*nodes[w] + want.PerEdge*edges[w]
		}
		got := FitCost(nodes, edges, seconds)
		if tol := 1e-9 * max(want.PerNode, want.PerEdge); math.Abs(got.PerNode-want.PerNode) > tol || math.Abs(got.PerEdge-want.PerEdge) > tol {
			t.Errorf("fit of %+v: %+v", want, got)
		}
	}

	// Times that only a negative per-node cost would fit exactly: the fit
	// keeps the costs non-negative.
	seconds := []float64{1, 2, 0.5, 3}
	edges = []float64{1000, 1800, 600, 2600}
	got := FitCost(nodes, edges, seconds)
	if got.PerNode < 0 || got.PerEdge < 0 || got.Zero() {
		t.Errorf("fit %+v, want non-negative and not zero", got)
	}

	// Two workers whose nodes and edges are proportional cannot tell the
	// two costs apart: the fit puts the time on the edges.
	got = FitCost([]float64{100, 200}, []float64{1000, 2000}, []float64{1, 2})
	if got.PerNode != 0 || math.Abs(got.PerEdge-1e-3) > 1e-15 {
		t.Errorf("fit of proportional workers %+v, want 1e-3 s per edge and none per node", got)
	}
}

// rmatParts returns an R-MAT graph and its multilevel partition into k
// parts of balanced node count.
func rmatParts(t testing.TB, scale int, edges int64, k int) (*graph.Graph, []int32) {
	t.Helper()
	g, err := graph.RMAT(scale, edges, graph.RMATA, graph.RMATB, graph.RMATC, 1)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := partition.Multilevel{}.Partition(g, k, partition.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return g, parts
}

// "On a graph of skewed degrees, with times proportional to the edges, the
// partition weighted by the fitted cost lowers the imbalance the cost
// predicts": a partition that balances node counts leaves the hubs' edges
// on few parts.
func TestWeightedRepartitionOfRMATLowersPredictedImbalance(t *testing.T) {
	const k = 4
	g, parts := rmatParts(t, 13, 60000, k)
	layout, err := partition.BuildLayout(g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	nodes, edges := partSizes(layout)
	seconds := make([]float64, k)
	for w := range seconds {
		seconds[w] = 1e-6 * edges[w] // the aggregation's share of the work
	}
	before := Imbalance(seconds)
	if before < 1.2 {
		t.Fatalf("the node-balanced partition's edge imbalance is %.3f; the test needs a skewed one", before)
	}
	cost := FitCost(nodes, edges, seconds)
	for _, method := range []string{"multilevel", "random", "stream"} {
		p, err := partition.New(method)
		if err != nil {
			t.Fatal(err)
		}
		weighted, err := p.Partition(g, k, partition.Options{Seed: 1, NodeWeights: cost.Weights(g)})
		if err != nil {
			t.Fatal(err)
		}
		after := Imbalance(cost.Predict(g, weighted, k))
		t.Logf("%s: edge imbalance %.3f of the node-balanced partition, %.3f weighted", method, before, after)
		if after > 1.1 || after >= before {
			t.Errorf("%s: the weighted partition's predicted imbalance is %.3f, the node-balanced one's %.3f", method, after, before)
		}
		if moved := relabel(parts, weighted, k); countMoved(parts, moved) > countMoved(parts, weighted) {
			t.Errorf("%s: relabelling moved more nodes (%d) than it saved", method, countMoved(parts, moved))
		}
	}
}

func countMoved(old, next []int32) int {
	n := 0
	for v := range old {
		if old[v] != next[v] {
			n++
		}
	}
	return n
}

// skewedLayout puts half the nodes of s on part 0 and deals the rest over
// the other k-1 parts: a partition whose compute is imbalanced.
func skewedLayout(t testing.TB, s sbmTask, k int) *partition.Layout {
	t.Helper()
	parts := make([]int32, s.g.N)
	for v := range parts {
		if v%2 == 1 {
			parts[v] = int32(1 + v/2%(k-1))
		}
	}
	layout, err := partition.BuildLayout(s.g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	return layout
}

// edgeTimes is a Rebalance.Measure that times every worker as the cost
// model would with 1 µs per node and 0.1 µs per adjacency entry, so that
// the decisions do not depend on the machine.
func edgeTimes(_ int, layout *partition.Layout, _ []float64) []float64 {
	nodes, edges := partSizes(layout)
	t := make([]float64, len(nodes))
	for w := range t {
		t[w] = 1e-6*nodes[w] + 1e-7*edges[w]
	}
	return t
}

type rebalancedRun struct {
	losses  []float64
	params  [][]float32
	records []Record
	// operators is what the run left counted in the memory account's
	// operators: the parts' it ended on.
	operators int64
}

func runRebalanced(t *testing.T, ctx context.Context, cfg train.Config, p train.Problem, layout *partition.Layout, opts Options, rebalance bool) (rebalancedRun, error) {
	t.Helper()
	var out rebalancedRun
	if rebalance {
		opts.Rebalance = &Rebalance{Threshold: 1.05, Partitioner: partition.Multilevel{}, Seed: 3, Window: 2, Measure: edgeTimes,
			Report: func(r Record, _ bool) {
				if n := len(out.records); n > 0 && out.records[n-1].Epoch == r.Epoch {
					out.records[n-1] = r
				} else {
					out.records = append(out.records, r)
				}
			}}
	}
	before := memacct.Held(memacct.Operators)
	_, loop, err := RunInProcess(ctx, cfg, p, layout, opts, func(m metrics.Epoch) error {
		out.losses = append(out.losses, m.Loss)
		return nil
	})
	out.operators = memacct.Held(memacct.Operators) - before
	if loop != nil {
		for _, q := range loop.Model().Params() {
			out.params = append(out.params, append([]float32(nil), q.Value.Data...))
		}
	}
	return out, err
}

// "A rebalanced run trains the model of the run that is not, to float
// rounding": re-partitioning moves rows between workers, never changes
// what is computed. The times are injected (edgeTimes), so the run
// rebalances after epoch 3 (epoch 1 is not measured, epochs 2 and 3 are
// the window), and the window after it finds the imbalance gone.
func TestRebalancedRunEqualsTheRunThatIsNot(t *testing.T) {
	s := newSBMTask(t, 240, 5)
	const k = 4
	layout := skewedLayout(t, s, k)
	for _, model := range []string{"gcn", "sage", "sage/bf16"} {
		t.Run(model, func(t *testing.T) {
			model, bf16 := strings.CutSuffix(model, "/bf16")
			var opts Options
			tol := 1e-5
			if bf16 { // the rebuilt parts and exchanges hold and send bf16 (see TestBF16PartsEqualOneProcess for the tolerance)
				opts.Precision, tol = train.BF16, 1e-4
			}
			cfg := equivalenceConfig(model, s.classes)
			cfg.Epochs = 10
			plain, err := runRebalanced(t, context.Background(), cfg, s.problem(), layout, opts, false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := runRebalanced(t, context.Background(), cfg, s.problem(), layout, opts, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.records) == 0 {
				t.Fatal("the skewed partition was not rebalanced")
			}
			r := got.records[0]
			t.Logf("%+v", r)
			if r.Epoch != 3 || r.NodesMoved == 0 || !(r.ImbalanceBefore > 1.05) || r.WindowAfter == nil || !(r.ImbalanceAfter < 1.05) {
				t.Fatalf("rebalance %+v: want one after epoch 3 that moved nodes and brought the imbalance below 1.05", r)
			}
			if math.Abs(r.ImbalanceAfter-r.ImbalancePredicted) > 1e-9 {
				t.Errorf("measured imbalance after %v, predicted %v: the injected times are the cost model's", r.ImbalanceAfter, r.ImbalancePredicted)
			}
			if len(got.records) != 1 {
				t.Errorf("%d rebalances, want 1 (the imbalance after it is below the threshold)", len(got.records))
			}
			// The old parts' operators are let go: the account holds one
			// partition's, about as many bytes as the run that kept its own.
			if got.operators <= 0 || got.operators > plain.operators*5/4 {
				t.Errorf("%d bytes of operators counted after the rebalanced run, %d after the other: want the new parts' alone", got.operators, plain.operators)
			}
			for e := range plain.losses {
				if !relClose(got.losses[e], plain.losses[e], tol) {
					t.Fatalf("epoch %d loss %v rebalanced, %v not", e+1, got.losses[e], plain.losses[e])
				}
			}
		})
	}
}

// "A run resumed from a checkpoint saved after a rebalance continues on
// the rebalanced partition, bit for bit": the checkpoint of the epoch
// that rebalanced is saved again with the new partition, and a later one
// carries it too.
//
// Gradient compression's residuals stay with their workers (their sum is
// what error feedback has yet to send, whichever rows each worker holds),
// and the halo codec's schedule with the exchange that replaces the old.
func TestResumeAfterRebalanceEqualsUninterruptedRun(t *testing.T) {
	s := newSBMTask(t, 240, 6)
	const k = 3
	layout := skewedLayout(t, s, k)
	cfg := equivalenceConfig("sage", s.classes)
	cfg.Epochs = 9
	for _, tc := range []struct{ name, codec, grad string }{{"exact", "", ""}, {"truncate adaptive", "truncate", ""}, {"grad topk", "", "topk:0.05"}} {
		t.Run(tc.name, func(t *testing.T) {
			resumeAfterRebalance(t, s, cfg, layout, func() Options {
				var o Options
				if tc.codec != "" {
					o = compressed(t, tc.codec, "adaptive:8:1:1:2", cfg.Epochs)
				}
				if tc.grad != "" {
					o.Grad = func() (gradcomp.Method, error) { return gradcomp.New(tc.grad, gradcomp.Options{Seed: 3}) }
				}
				return o
			})
		})
	}
}

func resumeAfterRebalance(t *testing.T, s sbmTask, cfg train.Config, layout *partition.Layout, options func() Options) {
	saved := map[int][]byte{}
	opts := options()
	opts.CheckpointEvery, opts.SaveCheckpoint = 1, func(st *checkpoint.State) error {
		var b bytes.Buffer
		err := checkpoint.Encode(&b, st)
		saved[st.Step] = b.Bytes()
		return err
	}
	want, err := runRebalanced(t, context.Background(), cfg, s.problem(), layout, opts, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.records) == 0 || want.records[0].Epoch != 3 || want.records[0].NodesMoved == 0 {
		t.Fatalf("rebalances %+v, want one after epoch 3", want.records)
	}
	for _, from := range []int{3, 5} {
		t.Run(fmt.Sprintf("from epoch %d", from), func(t *testing.T) {
			st, err := checkpoint.Decode(saved[from])
			if err != nil {
				t.Fatal(err)
			}
			if st.Tensor(assignmentTensor) == nil {
				t.Fatal("the checkpoint lacks the assignment")
			}
			o := options()
			o.Resume = st
			got, err := runRebalanced(t, context.Background(), cfg, s.problem(), layout, o, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.records) == 0 || got.records[0].Epoch != 3 {
				t.Errorf("the resumed run reports rebalances %+v, want the one after epoch 3", got.records)
			}
			for i, l := range got.losses {
				if l != want.losses[from+i] {
					t.Fatalf("epoch %d loss %v resumed, %v uninterrupted", from+1+i, l, want.losses[from+i])
				}
			}
			for i := range want.params {
				for j := range want.params[i] {
					if got.params[i][j] != want.params[i][j] {
						t.Fatalf("parameter %d[%d] = %v resumed, %v uninterrupted", i, j, got.params[i][j], want.params[i][j])
					}
				}
			}
		})
	}
}

// A rebalancing run needs a layout and the whole graph on every worker.
func TestRebalanceRefusals(t *testing.T) {
	s := newSBMTask(t, 60, 1)
	cfg := equivalenceConfig("gcn", s.classes)
	cfg.Epochs = 1
	rb := &Rebalance{Threshold: 1.1, Partitioner: partition.Random{}}
	if _, _, err := RunInProcess(context.Background(), cfg, s.problem(), nil, Options{Rebalance: rb}, nil); err == nil {
		t.Error("one worker rebalanced")
	}
	layout := skewedLayout(t, s, 2)
	for _, bad := range []Rebalance{{Threshold: 1, Partitioner: partition.Random{}}, {Threshold: 1.2}} {
		_, _, err := RunInProcess(context.Background(), cfg, s.problem(), layout, Options{Rebalance: &bad}, nil)
		if err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("%+v: err = %v", bad, err)
		}
	}
	delta := compressed(t, "delta", "fixed:1", cfg.Epochs)
	delta.Rebalance = rb
	if _, _, err := RunInProcess(context.Background(), cfg, s.problem(), layout, delta, nil); err == nil || !strings.Contains(err.Error(), "delta") {
		t.Errorf("a delta codec's run rebalanced: %v", err)
	}
}

// When a run re-partitions: after an unmeasured first epoch on a layout
// and a full window over the threshold; not after the run's last epoch;
// not again once a re-partition did not lower the measured imbalance, nor
// more than Max times.
func TestRebalanceDecisions(t *testing.T) {
	layout := &partition.Layout{N: 4, K: 2, Parts: make([]partition.Part, 2)}
	r := &rebalancer{cfg: Rebalance{Threshold: 1.1, Window: 2, Max: 2}, layout: layout, sum: make([]float64, 2), last: 12}
	skewed, even := []float64{3, 1}, []float64{1, 1}
	step := func(epoch int, times []float64, want bool) {
		t.Helper()
		if got := r.observe(epoch, times); got != want {
			t.Fatalf("epoch %d, times %v: due %v, want %v", epoch, times, got, want)
		}
	}
	rebalanced := func(epoch int, before float64) { // what repartition records
		r.records = append(r.records, Record{Epoch: epoch, ImbalanceBefore: before})
		r.onLayout = 0
	}
	step(1, skewed, false) // not measured
	step(2, skewed, false) // half a window
	step(3, skewed, true)
	rebalanced(3, 1.5)
	step(4, skewed, false)
	step(5, even, false)
	step(6, skewed, true) // the window after: 4/3 (from 1.5, it helped) and over 1.1
	if r.records[0].ImbalanceAfter == 0 || r.records[0].WindowAfter[0] != 5 || r.records[0].WindowAfter[1] != 6 {
		t.Fatalf("record %+v: the imbalance after is that of epochs 5 and 6", r.records[0])
	}
	rebalanced(6, 4.0/3)
	step(7, skewed, false)
	step(8, skewed, false)
	step(9, skewed, false) // 1.5 after 4/3: did not help, and Max is reached
	r.records, r.onLayout = r.records[:1], 0
	step(10, skewed, false)
	step(11, skewed, false)
	step(12, skewed, false) // the last epoch
}
