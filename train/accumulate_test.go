package train

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// batchStepper trains a model on the training rows in batches of a fixed
// size, in a fixed order: a mini-batch stepper without a sampler. Its
// loss is normalised by the rows of all the micro-batches of the
// optimiser step, so that accumulated micro-batches step as one batch.
type batchStepper struct {
	model  *nn.Model
	blocks []*nn.Block
	x      nn.Features
	labels []int32
	rows   []int32
	batch  int
	loss   nn.CrossEntropy
}

func newBatchStepper(t *testing.T, cfg Config, batch int) *batchStepper {
	t.Helper()
	const n, in = 70, 6
	g, err := graph.FromEdges(n, nil, nil, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	x := tensor.New(n, in)
	labels := make([]int32, n)
	rows := make([]int32, n)
	for i := range n {
		labels[i] = int32(i % cfg.Model.Classes)
		for j := range in {
			x.Data[i*in+j] = float32(rng.NormFloat64()) + float32(labels[i]*int32(j%2))
		}
		rows[i] = int32(i)
	}
	model, err := NewModel(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	return &batchStepper{model: model, blocks: []*nn.Block{nn.WholeGraph(g)}, x: nn.DenseFeatures(x), labels: labels, rows: rows, batch: batch}
}

func (s *batchStepper) Model() *nn.Model { return s.model }
func (s *batchStepper) Batches() int     { return (len(s.rows) + s.batch - 1) / s.batch }

// rowsOf returns the rows of batch i.
func (s *batchStepper) rowsOf(i int) []int32 {
	return s.rows[i*s.batch : min((i+1)*s.batch, len(s.rows))]
}

func (s *batchStepper) Step(b Batch) (float64, error) {
	norm := 0
	for i := b.Index - b.Micro; i < b.Index-b.Micro+b.Micros; i++ {
		norm += len(s.rowsOf(i))
	}
	logits := s.model.Forward(s.blocks, s.x, true)
	loss, dlogits, err := s.loss.Forward(logits, s.labels, s.rowsOf(b.Index), float64(norm))
	if err != nil {
		return 0, err
	}
	s.model.Backward(dlogits)
	return loss, nil
}

func (s *batchStepper) Evaluate(int) (Evaluation, error) {
	logits := s.model.Forward(s.blocks, s.x, false)
	n := float64(len(s.rows))
	c := float64(nn.Correct(logits, s.labels, s.rows))
	return Evaluation{TrainCorrect: c, TrainCount: n, ValCorrect: c, ValCount: n, TestCorrect: c, TestCount: n}, nil
}

func (s *batchStepper) State() (json.RawMessage, error) { return nil, nil }
func (s *batchStepper) Restore(json.RawMessage) error   { return nil }

func accumulationConfig() Config {
	return Config{Model: nn.Config{Model: "mlp", Hidden: 8, Classes: 3, Layers: 2, Seed: 9},
		Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}, WeightDecay: 1e-3, Epochs: 3}
}

// "Gradient accumulation over k steps (gradients summed in the trainer's
// packed buffer; k steps of batch b must equal one step of batch k·b to
// float rounding)." 70 rows in batches of 10, four accumulated per step,
// against batches of 40: each epoch steps on rows [0, 40) and [40, 70).
func TestAccumulatedMicroBatchesStepAsOneBatch(t *testing.T) {
	run := func(batch, accumulate int) (losses []float64, params []float32) {
		cfg := accumulationConfig()
		cfg.Accumulate = accumulate
		s := newBatchStepper(t, cfg, batch)
		l, err := New(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.Run(context.Background(), Hooks{OnEpoch: func(m Metrics) error { losses = append(losses, m.Loss); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if l.opt.Steps() != 2*cfg.Epochs {
			t.Fatalf("batches of %d accumulated %d at a time: %d optimiser steps, want %d", batch, accumulate, l.opt.Steps(), 2*cfg.Epochs)
		}
		for _, p := range s.model.Params() {
			params = append(params, p.Value.Data...)
		}
		return losses, params
	}
	wantLoss, want := run(40, 1)
	gotLoss, got := run(10, 4)
	for i := range wantLoss {
		if math.Abs(gotLoss[i]-wantLoss[i]) > 1e-5*math.Abs(wantLoss[i]) {
			t.Fatalf("epoch %d: loss %v accumulated, %v in one batch", i+1, gotLoss[i], wantLoss[i])
		}
	}
	differ := false
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5+1e-4*math.Abs(float64(want[i])) {
			t.Fatalf("parameter %d: %v accumulated, %v in one batch", i, got[i], want[i])
		}
		differ = differ || got[i] != want[i]
	}
	// And a different split of the same rows does step differently: the
	// test would notice accumulation that did nothing.
	_, other := run(35, 1)
	same := true
	for i := range want {
		same = same && math.Abs(float64(other[i]-want[i])) <= 1e-5+1e-4*math.Abs(float64(want[i]))
	}
	if same {
		t.Fatal("batches of 35 gave the parameters of batches of 40: the comparison cannot tell batches apart")
	}
	t.Logf("accumulated and whole batches differ in the last bits: %v", differ)
}

// Config.Steps ends a run after that many optimiser steps, mid-epoch, and
// the run still evaluates and keeps the best parameters.
func TestStepsLimitEndsTheRun(t *testing.T) {
	cfg := accumulationConfig()
	cfg.Epochs, cfg.Steps = 10, 5
	s := newBatchStepper(t, cfg, 10)
	l, err := New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Run(context.Background(), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if l.opt.Steps() != 5 || res.Epochs != 1 || res.Best.Epoch != 1 {
		t.Fatalf("%d steps over %d epochs (best %d), want 5 steps in the first epoch", l.opt.Steps(), res.Epochs, res.Best.Epoch)
	}
}
