package fullgraph

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
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

func presetConfig(t testing.TB, model string, classes int, seed uint64) train.Config {
	t.Helper()
	p, err := train.PresetFor(model)
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
	var accs []float64
	for _, seed := range seeds {
		tr, err := New(presetConfig(t, "gcn", ds.NumClasses, seed), data, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Run(context.Background(), train.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: best epoch %d, val %.3f, test %.3f", seed, res.Best.Epoch, res.Best.ValAcc, res.Best.TestAcc)
		accs = append(accs, res.Best.TestAcc)
	}
	if mean := stats.Mean(accs); mean < 0.79 {
		t.Errorf("mean test accuracy %.4f over %d seeds, want ≥ 0.79", mean, len(seeds))
	}
}

// TestEpochAllocations checks that buffers are reused: after the first
// epoch, every training step plus evaluation allocates (almost) nothing.
func TestEpochAllocations(t *testing.T) {
	ds, data := coraData(t)
	for _, model := range []string{"gcn", "sage", "gat", "gcn/bf16", "sage/bf16", "gat/bf16"} {
		t.Run(model, func(t *testing.T) {
			model, bf16 := strings.CutSuffix(model, "/bf16")
			d := data
			if bf16 { // dense bf16 features, read a block at a time
				d.Features = nn.BF16Features(tensor.MatrixToBF16(data.Features.Sparse.Dense()))
			}
			tr, err := New(presetConfig(t, model, ds.NumClasses, 1), d, nil)
			if err != nil {
				t.Fatal(err)
			}
			tr.Model().SetBF16(bf16)
			epoch := func() {
				if _, err := tr.Step(1, 0); err != nil {
					t.Fatal(err)
				}
				if _, err := tr.Evaluate(); err != nil {
					t.Fatal(err)
				}
			}
			epoch() // first epoch: buffers, operators, transposes
			// The kernels' scratch is a pool their parallel tasks take from
			// in no fixed order, so a piece may meet its largest product
			// (and grow) only in a later epoch, the more likely the more
			// shapes there are (the blocked bf16 products have a few). Each
			// piece grows to its largest product once, so that growth dies
			// out: every one of window consecutive epochs must allocate at
			// most 16 KiB, and the window may start late, after epochs of
			// growth, but within warmUp epochs. An allocation that recurs
			// within any window epochs fails, however few epochs it hits.
			const window, warmUp, limit = 30, 150, 16 << 10
			var before, after runtime.MemStats
			var grew []string // the epochs over the limit before the window, and what they allocated
			var clean []float64
			for i := 1; len(clean) < window; i++ {
				if i > warmUp+window {
					t.Fatalf("%s: no %d consecutive epochs in %d allocated at most %d bytes each; %d epochs over it: %s", model, window, warmUp+window, limit, len(grew), strings.Join(grew[:min(len(grew), 8)], ", "))
				}
				runtime.ReadMemStats(&before)
				epoch()
				runtime.ReadMemStats(&after)
				bytes := float64(after.TotalAlloc - before.TotalAlloc)
				if bytes > limit {
					grew = append(grew, fmt.Sprintf("epoch %d: %.0f bytes in %d allocations", i, bytes, after.Mallocs-before.Mallocs))
					clean = clean[:0]
					continue
				}
				clean = append(clean, bytes)
			}
			t.Logf("%s: at most %.0f bytes (median %.0f) per epoch over %d epochs; growth before them: %v", model, slices.Max(clean), stats.Median(clean), window, grew)
		})
	}
}

// sumGroup sums values across n goroutines: an in-memory all-reduce for
// testing the trainer's multi-worker protocol.
type sumGroup struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	arrived int
	round   int
	pending int // workers yet to copy out the last result
	acc     []float64
}

func newSumGroup(n int) *sumGroup {
	g := &sumGroup{n: n}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *sumGroup) sum(x []float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.pending > 0 {
		g.cond.Wait()
	}
	if g.arrived == 0 {
		g.acc = make([]float64, len(x))
	}
	for i, v := range x {
		g.acc[i] += v
	}
	g.arrived++
	round := g.round
	if g.arrived == g.n {
		g.arrived, g.pending = 0, g.n
		g.round++
		g.cond.Broadcast()
	}
	for round == g.round {
		g.cond.Wait()
	}
	copy(x, g.acc)
	if g.pending--; g.pending == 0 {
		g.cond.Broadcast()
	}
}

func (g *sumGroup) SumFloat64(x []float64) error { g.sum(x); return nil }

func (g *sumGroup) SumFloat32(x []float32) error {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	g.sum(y)
	for i, v := range y {
		x[i] = float32(v)
	}
	return nil
}

// TestWorkersMatchOneWorker runs the multi-worker protocol with two workers
// that each see the whole graph but own half of every node set: the summed
// loss normalisation, gradient and metric reductions must reproduce one
// worker's losses and result.
func TestWorkersMatchOneWorker(t *testing.T) {
	ds, data := coraData(t)
	cfg := presetConfig(t, "gcn", ds.NumClasses, 7)
	cfg.Epochs = 30

	var want []float64
	one, err := New(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRes, err := one.Run(context.Background(), train.Hooks{OnEpoch: func(m train.Metrics) error { want = append(want, m.Loss); return nil }})
	if err != nil {
		t.Fatal(err)
	}

	const workers = 2
	half := func(rows []int32, w int) []int32 {
		var out []int32
		for i, r := range rows {
			if i%workers == w {
				out = append(out, r)
			}
		}
		return out
	}
	group := newSumGroup(workers)
	losses := make([][]float64, workers)
	results := make([]train.Result, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := data
			d.Block = nn.WholeGraph(cora.Graph) // operators are cached per Graph
			d.Train, d.Val, d.Test = half(data.Train, w), half(data.Val, w), half(data.Test, w)
			c := cfg
			c.Reducer = group
			tr, err := New(c, d, nil)
			if err != nil {
				errs[w] = err
				return
			}
			results[w], errs[w] = tr.Run(context.Background(), train.Hooks{OnEpoch: func(m train.Metrics) error {
				losses[w] = append(losses[w], m.Loss)
				return nil
			}})
		}()
	}
	wg.Wait()
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		for e, l := range losses[w] {
			if d := math.Abs(l-want[e]) / math.Abs(want[e]); d > 1e-5 {
				t.Errorf("worker %d epoch %d: loss %v, one worker %v (relative difference %.2g)", w, e+1, l, want[e], d)
			}
		}
		if got := results[w].Best; got.Epoch != wantRes.Best.Epoch || got.ValAcc != wantRes.Best.ValAcc || got.TestAcc != wantRes.Best.TestAcc {
			t.Errorf("worker %d best %+v, one worker %+v", w, got, wantRes.Best)
		}
	}
}

func TestEarlyStoppingKeepsBestParameters(t *testing.T) {
	ds, data := coraData(t)
	cfg := presetConfig(t, "gcn", ds.NumClasses, 3)
	cfg.Optimizer.LR = 0.05 // overfits within a few dozen epochs
	cfg.Epochs, cfg.Patience = 500, 10
	tr, err := New(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []train.Metrics
	res, err := tr.Run(context.Background(), train.Hooks{OnEpoch: func(m train.Metrics) error { seen = append(seen, m); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.StoppedEarly || res.Epochs < res.Best.Epoch+cfg.Patience {
		t.Errorf("ran %d epochs (stopped early: %v) with best epoch %d and patience %d", res.Epochs, res.StoppedEarly, res.Best.Epoch, cfg.Patience)
	}
	// The last Patience epochs improved neither validation accuracy nor loss.
	last := seen[len(seen)-1-cfg.Patience]
	for _, m := range seen[:len(seen)-cfg.Patience] {
		last.ValAcc, last.ValLoss = max(last.ValAcc, m.ValAcc), min(last.ValLoss, m.ValLoss)
	}
	for _, m := range seen[len(seen)-cfg.Patience:] {
		if m.ValAcc > last.ValAcc || m.ValLoss < last.ValLoss {
			t.Errorf("epoch %d improved on the earlier best (acc %.4f, loss %.4f) yet training stopped", m.Epoch, m.ValAcc, m.ValLoss)
		}
	}
	for _, m := range seen {
		if m.ValAcc > res.Best.ValAcc {
			t.Errorf("epoch %d has validation accuracy %.4f above the best %.4f", m.Epoch, m.ValAcc, res.Best.ValAcc)
		}
	}
	// The model now holds the best epoch's parameters.
	m, err := tr.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if m.ValAcc != res.Best.ValAcc || m.TestAcc != res.Best.TestAcc {
		t.Errorf("after Run the model scores val %.4f test %.4f, best epoch scored %.4f %.4f", m.ValAcc, m.TestAcc, res.Best.ValAcc, res.Best.TestAcc)
	}
}

func TestNotFiniteLoss(t *testing.T) {
	ds, data := coraData(t)
	cfg := presetConfig(t, "gcn", ds.NumClasses, 1)
	cfg.Optimizer.LR = 1e30
	cfg.Epochs = 20
	tr, err := New(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), train.Hooks{})
	if !errors.Is(err, train.ErrNotFinite) {
		t.Fatalf("Run error %v, want train.ErrNotFinite", err)
	}
	for _, p := range tr.Model().Params() {
		for _, v := range p.Value.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("after a diverged run (%d epochs) parameter %s holds %v; want the best epoch's finite values", res.Epochs, p.Name, v)
			}
		}
	}
}

func TestNewRejectsBadData(t *testing.T) {
	ds, data := coraData(t)
	cfg := presetConfig(t, "gcn", ds.NumClasses, 1)
	noTrain := data
	noTrain.Train = nil
	outside := data
	outside.Val = []int32{int32(ds.NumNodes())}
	zeroEpochs := cfg
	zeroEpochs.Epochs = 0
	tests := []struct {
		name string
		cfg  train.Config
		data Data
	}{
		{"no training nodes", cfg, noTrain},
		{"row outside the graph", cfg, outside},
		{"zero epochs", zeroEpochs, data},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg, tt.data, nil); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
}

// Row normalisation is for counts: features with negative values, whose
// rows may sum to about zero, are left as they are.
func TestFromDatasetNormalisesCountsOnly(t *testing.T) {
	d := &dataset.Dataset{Graph: nil, Dense: tensor.New(2, 2), Labels: []int32{0, 1}}
	copy(d.Dense.Data, []float32{1, 3, 0.5, -0.5})
	if g, err := graph.FromEdges(2, nil, nil, graph.BuildOptions{}); err == nil {
		d.Graph = g
	}
	data, err := FromDataset(d, dataset.Split{}, nn.ForceDense, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := data.Features.Dense.Data; got[0] != 1 || got[3] != -0.5 {
		t.Fatalf("features %v: a matrix with a negative value was normalised", got)
	}
	copy(d.Dense.Data, []float32{1, 3, 0.5, 0.5})
	data, _ = FromDataset(d, dataset.Split{}, nn.ForceDense, true)
	if got := data.Features.Dense.Data; got[0] != 0.25 || got[3] != 0.5 {
		t.Fatalf("features %v: counts were not normalised", got)
	}
}

// An evaluation pass after a training step grows no buffer of a row per
// node: the model's layers serve both, and the validation loss keeps two
// rows per validation node (nn.CrossEntropy.Loss), made once.
func TestEvaluationAddsNoBuffers(t *testing.T) {
	ds, data := coraData(t)
	for _, model := range []string{"gcn", "sage"} {
		s, err := NewStepper(presetConfig(t, model, ds.NumClasses, 1), data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(train.Batch{}); err != nil {
			t.Fatal(err)
		}
		held := memacct.Held(memacct.Activations)
		if _, err := s.Evaluate(1); err != nil {
			t.Fatal(err)
		}
		lossRows := int64(2 * len(data.Val) * ds.NumClasses * 4)
		if grown := memacct.Held(memacct.Activations) - held; grown > lossRows {
			t.Errorf("%s: evaluation grew the activations by %d bytes, the validation loss's rows take %d", model, grown, lossRows)
		}
		held = memacct.Held(memacct.Activations)
		if _, err := s.Evaluate(2); err != nil {
			t.Fatal(err)
		}
		if grown := memacct.Held(memacct.Activations) - held; grown != 0 {
			t.Errorf("%s: a second evaluation grew the activations by %d bytes", model, grown)
		}
	}
}

// A training step writes the loss's gradient over the logits: the loss
// keeps no buffer of the logits' size, which a gradient of its own then
// adds.
func TestStepWritesTheLossGradientOverTheLogits(t *testing.T) {
	ds, data := coraData(t)
	for _, model := range []string{"gcn", "sage", "gat"} {
		s, err := NewStepper(presetConfig(t, model, ds.NumClasses, 1), data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(train.Batch{}); err != nil {
			t.Fatal(err)
		}
		logits := s.model.Forward(s.blocks, data.Features, false)
		held := memacct.Held(memacct.Activations)
		if _, _, err := s.loss.Forward(logits, data.Labels, data.Train, 1); err != nil {
			t.Fatal(err)
		}
		if grown, size := memacct.Held(memacct.Activations)-held, int64(4*logits.Rows*logits.Cols); grown < size {
			t.Errorf("%s: a gradient of the loss's own grew the activations by %d bytes, want the logits' %d", model, grown, size)
		}
	}
}
