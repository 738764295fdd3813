package gradcomp

import (
	"strconv"

	"github.com/graft-gnn/graft/comm"
)

// warmup sums the gradients exactly, with the communicator's all-reduce,
// during the run's first epochs, and compresses them with its method
// afterwards (",warmup:EPOCHS"): the early steps, where the gradients are
// large and change fast, get exact sums, as PyTorch's PowerSGD hook runs
// plain all-reduce until start_powerSGD_iter and Deep Gradient Compression
// warms its sparsity up over the first epochs. The trainer says each
// step's epoch (SetEpoch). During the warm-up the method's residuals stay
// zero, so that nothing is owed when compression starts; top-k with
// momentum correction accumulates its velocity (the optimiser steps
// without momentum of its own) and all-reduces it, and scaled top-k keeps
// averaging its squared gradients.
type warmup struct {
	Method
	topk   *topK // Method, when it is top-k: its state goes on during the warm-up
	epochs int
	epoch  int // the current step's, 1-based; 0 before the trainer says
}

func newWarmup(m Method, epochs int) *warmup {
	t, _ := m.(*topK)
	return &warmup{Method: m, topk: t, epochs: epochs}
}

// SetEpoch tells m the epoch of the steps that follow (1-based), for a
// warm-up; a method without one ignores it. It reports whether m delivers
// those steps' gradients late (IsDelayed), which a warm-up's exact epochs
// do not: the optimiser then steps every coordinate, as with exact sums.
func SetEpoch(m Method, epoch int) (delayed bool) {
	if w, ok := m.(*warmup); ok {
		w.epoch = epoch
		return !w.warming() && IsDelayed(w.Method)
	}
	return IsDelayed(m)
}

// WarmupEpochs is the number of first epochs m sums exactly, 0 for none.
func WarmupEpochs(m Method) int {
	if w, ok := m.(*warmup); ok {
		return w.epochs
	}
	return 0
}

func (w *warmup) String() string {
	return w.Method.String() + ",warmup:" + strconv.Itoa(w.epochs)
}

// warming reports whether the current step is in the warm-up: the epochs
// are 1-based, and a trainer that never says counts as epoch 1.
func (w *warmup) warming() bool { return max(w.epoch, 1) <= w.epochs }

func (w *warmup) Reduce(c comm.Communicator, site string, g []float32) error {
	if !w.warming() {
		return w.Method.Reduce(c, site, g)
	}
	if t := w.topk; t != nil {
		if err := checkLen("topk", len(g), len(t.residual)); err != nil {
			return err
		}
		np := len(t.residual)
		t.averageSquares(g[:np])
		if t.momentum > 0 { // DGC: the workers' velocities sum to the sum's
			u, m := t.velocity, float32(t.momentum)
			for i, x := range g[:np] {
				u[i] = m*u[i] + x
				g[i] = u[i]
			}
		}
	}
	return c.AllReduce(site, g)
}

// DelaysGradients passes the method's on: after the warm-up its gradients
// arrive late, and during it every coordinate arrives at every step, which
// the optimiser's catch-up steps as an ordinary step.
func (w *warmup) DelaysGradients() bool { return IsDelayed(w.Method) }

// Momentum passes the method's on.
func (w *warmup) Momentum() float64 { return MomentumOf(w.Method) }
