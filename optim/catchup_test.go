package optim

import (
	"math"
	"slices"
	"testing"
)

// schedule is a learning rate that changes every step, so that a replayed
// step taken at the wrong step's rate shows.
func schedule(k int) float64 { return 0.05 / float64(k) }

// TestCatchUpWithDenseGradientsIsStep checks CatchUpStep against Step when
// every coordinate's gradient arrives at every step: nothing to catch up,
// the same bits.
func TestCatchUpWithDenseGradientsIsStep(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			x, grads := randomSteps(5, 6, 8)
			cu := c.cfg
			cu.CatchUp = true
			dense, lazy := NewState[float32](c.cfg, len(x)), NewState[float32](cu, len(x))
			xd, xl := to32(x), to32(x)
			for i, g := range grads {
				dense.Step(xd, xd, to32(g), schedule(i+1), decay)
				lazy.CatchUpStep(xl, to32(g), schedule, decay)
				if !slices.Equal(xd, xl) {
					t.Fatalf("step %d: catch-up %v, Step %v", i+1, xl, xd)
				}
			}
		})
	}
}

// TestCatchUpSpreadsADelayedSum checks the claim CatchUpStep is for: a
// coordinate that receives the sum of a steps' gradients every a steps,
// and nothing in between, is where Step with the gradients spread evenly
// would have put it, at every arrival; and in between it does not move.
func TestCatchUpSpreadsADelayedSum(t *testing.T) {
	const every = 4
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			x, grads := randomSteps(9, 12, 6)
			cu := c.cfg
			cu.CatchUp = true
			dense, lazy := NewState[float64](c.cfg, len(x)), NewState[float64](cu, len(x))
			xd, xl := slices.Clone(x), slices.Clone(x)
			sum := make([]float64, len(x))
			for i, g := range grads {
				// Dense sees the mean of each block of `every` gradients at
				// every step of the block; the lazy state sees its sum at
				// the block's last step and zero before.
				block := grads[i/every*every : i/every*every+every]
				mean := make([]float64, len(x))
				for _, b := range block {
					for j := range mean {
						mean[j] += b[j] / every
					}
				}
				dense.Step(xd, xd, mean, schedule(i+1), decay)
				for j := range sum {
					sum[j] += g[j]
				}
				before := slices.Clone(xl)
				if (i+1)%every != 0 {
					lazy.CatchUpStep(xl, make([]float64, len(x)), schedule, decay)
					if !slices.Equal(xl, before) {
						t.Fatalf("step %d: a coordinate without gradient moved: %v → %v", i+1, before, xl)
					}
					continue
				}
				lazy.CatchUpStep(xl, sum, schedule, decay)
				clear(sum)
				for j := range xd {
					if math.Abs(xd[j]-xl[j]) > 1e-12 {
						t.Fatalf("step %d, coordinate %d: catch-up %.17g, Step with the mean %.17g", i+1, j, xl[j], xd[j])
					}
				}
			}
		})
	}
}

// TestCatchUpStateRoundTrip checks that last_step is among the buffers a
// checkpoint saves, so that a restored state catches up the same steps.
func TestCatchUpStateRoundTrip(t *testing.T) {
	cfg := Config{Rule: Adam, CatchUp: true}
	x, grads := randomSteps(3, 4, 8)
	sparse := func(g []float64, step int) []float32 {
		out := to32(g)
		for j := range out {
			if (j+step)%3 != 0 {
				out[j] = 0
			}
		}
		return out
	}
	a := NewState[float32](cfg, len(x))
	xa := to32(x)
	for i, g := range grads[:3] {
		a.CatchUpStep(xa, sparse(g, i), schedule, decay)
	}
	b := NewState[float32](cfg, len(x))
	var names []string
	for i, buf := range b.Buffers() {
		names = append(names, buf.Name)
		copy(buf.Data, a.Buffers()[i].Data)
	}
	if want := []string{"exp_avg", "exp_avg_sq", "last_step"}; !slices.Equal(names, want) {
		t.Fatalf("buffers %v, want %v", names, want)
	}
	b.Steps = a.Steps
	xb := slices.Clone(xa)
	a.CatchUpStep(xa, to32(grads[3]), schedule, decay)
	b.CatchUpStep(xb, to32(grads[3]), schedule, decay)
	if !slices.Equal(xa, xb) {
		t.Errorf("restored state stepped to %v, the original to %v", xb, xa)
	}
}

// Plain steps of a catch-up state (the exact epochs of a compression's
// warm-up) step every coordinate, so the catch-up steps after them owe
// nothing for them: a coordinate that next receives a gradient takes one
// step, as it would under plain steps throughout.
func TestPlainStepsOweNoCatchUp(t *testing.T) {
	x, grads := randomSteps(3, 6, 10)
	for _, rule := range []Rule{Adam, SGD} {
		cfg := Config{Rule: rule, Momentum: 0.9}
		plain, catchUp := NewState[float64](cfg, len(x)), NewState[float64](Config{Rule: rule, Momentum: 0.9, CatchUp: true}, len(x))
		xp, xc := slices.Clone(x), slices.Clone(x)
		for i, g := range grads[:2] {
			plain.Step(xp, xp, g, schedule(i+1), decay)
			catchUp.Step(xc, xc, g, schedule(i+1), decay)
		}
		plain.Step(xp, xp, grads[2], schedule(3), decay)
		only := make([]float64, len(x)) // the third step's gradient at coordinate 0 alone
		only[0] = grads[2][0]
		catchUp.CatchUpStep(xc, only, schedule, decay)
		if d := math.Abs(xc[0] - xp[0]); d > 1e-12 {
			t.Errorf("%v: coordinate 0 at %v after the catch-up step, %v after plain steps", rule, xc[0], xp[0])
		}
	}
}
