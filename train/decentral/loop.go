package decentral

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/graph"
)

// offline is a task whose network is fixed and whose data is a stream of
// samples in mini-batches: the regression and power-allocation tasks.
type offline struct {
	name, metric string
	model        Model
	graph        *graph.Graph
	train, test  []Sample
	batch        int
	epochs       int
	lr           float64
	evalEvery    int // mini-batches between evaluations
	// evaluate scores the model's outputs on the test samples.
	evaluate  func(outputs [][]float64) float64
	baselines map[string]float64
}

func runOffline(t offline, o Options) (*Result, error) {
	lr := t.lr
	if o.LR > 0 {
		lr = o.LR
	}
	opt := Optimizer{Rule: o.Rule, LR: lr}
	params := t.model.Init(newRand(o.Seed, streamInit))
	cfg := Config{Model: t.model, Graph: t.graph, Optimizer: opt, Piggyback: o.Piggyback, Faults: o.faults(), Params: params}
	with, without, err := measureCosts(t.model, cfg, t.train[:t.batch])
	if err != nil {
		return nil, err
	}
	net, err := New(cfg)
	if err != nil {
		return nil, err
	}
	defer net.Close()
	ref := newCentral(t.model, params, opt)

	res := &Result{
		Task: t.name, Metric: t.metric, Optimizer: "d" + o.Rule.String(), Seed: o.Seed,
		Drop: o.Drop, Piggyback: o.Piggyback, Baselines: t.baselines,
		WithPiggyback: with, WithoutPiggyback: without,
	}
	_, _, res.RoundsFormula = RoundsFormula(t.model, t.batch, t.train[0].Loss[0].Coupled())
	evaluate := func(b, rounds int) error {
		ys, _, err := net.Predict(t.test)
		if err != nil {
			return err
		}
		pt := Point{Batch: b, Rounds: rounds, Distributed: t.evaluate(ys)}
		ys = ys[:0]
		for _, s := range t.test {
			ys = append(ys, t.model.Predict(ref.params, s))
		}
		pt.Centralized = t.evaluate(ys)
		if math.IsNaN(pt.Distributed) || math.IsNaN(pt.Centralized) {
			return fmt.Errorf("decentral: %s diverged at mini-batch %d (metric NaN)", t.name, b)
		}
		return res.record(pt, o.OnEval)
	}
	perEpoch := len(t.train) / t.batch
	total := perEpoch * t.epochs
	if err := evaluate(0, 0); err != nil {
		return nil, err
	}
	for b := 1; b <= total; b++ {
		lo := ((b - 1) % perEpoch) * t.batch
		batch := t.train[lo : lo+t.batch]
		st, err := net.Train(batch)
		if err != nil {
			return nil, err
		}
		if _, err := ref.step(batch); err != nil {
			return nil, err
		}
		res.count(st)
		res.AwayUpdates += st.Away
		if b%t.evalEvery == 0 || b == total {
			if err := evaluate(b, res.Total.Rounds); err != nil {
				return nil, err
			}
		}
		if o.Progress != nil {
			o.Progress(b, total)
		}
	}
	return res, nil
}
