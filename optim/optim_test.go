package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// adamStep is Adam's step at lr 0.1 from bias-corrected moments, written as
// torch.optim.Adam's documentation writes it (not in the order State
// computes it, so the comparison is not of a formula with itself).
func adamStep(m, v float64, t int) float64 {
	bc1, bc2 := 1-math.Pow(0.9, float64(t)), 1-math.Pow(0.999, float64(t))
	return 0.1 * (m / bc1) / (math.Sqrt(v/bc2) + 1e-8)
}

// TestStepByHand checks one or two steps of each rule from x = 1 at lr 0.1
// against values worked out by hand in float64.
func TestStepByHand(t *testing.T) {
	// Adam with g = 0.5, then −1: m = 0.1·0.5 = 0.05, v = 0.001·0.25 =
	// 0.00025; then m = 0.9·0.05 − 0.1 = −0.055, v = 0.999·0.00025 +
	// 0.001 = 0.00124975.
	adam1 := 1 - adamStep(0.05, 0.00025, 1)
	adamw1 := 1*(1-0.1*0.1) - adamStep(0.05, 0.00025, 1) // decay shrinks x first
	// AMSGrad with g = 1, then 0.01: m = 0.1, v = 0.001; then m = 0.09 +
	// 0.001 = 0.091 and v = 0.000999 + 1e-7 = 0.0009991 < 0.001, so the
	// second step divides by the first v.
	ams1 := 1 - adamStep(0.1, 0.001, 1)
	for _, tc := range []struct {
		name  string
		cfg   Config
		decay float64
		grads []float64
		want  []float64
	}{
		{"sgd", Config{Rule: SGD}, 0, []float64{0.5, 0.5}, []float64{0.95, 0.9}},
		// L2: g = 0.5 + 0.1·1 = 0.6.
		{"sgd L2", Config{Rule: SGD}, 0.1, []float64{0.5}, []float64{0.94}},
		// buf = 0.5, then 0.9·0.5 + 0.5 = 0.95.
		{"sgd momentum", Config{Rule: SGD, Momentum: 0.9}, 0, []float64{0.5, 0.5}, []float64{0.95, 0.855}},
		// Nesterov steps by g + 0.9·buf: 0.5 + 0.45 = 0.95, then 0.5 + 0.9·0.95 = 1.355.
		{"sgd nesterov", Config{Rule: SGD, Momentum: 0.9, Nesterov: true}, 0, []float64{0.5, 0.5}, []float64{0.905, 0.7695}},
		{"adam", Config{Rule: Adam}, 0, []float64{0.5, -1}, []float64{adam1, adam1 - adamStep(-0.055, 0.00124975, 2)}},
		// L2: g = 0.5 + 0.1·1 = 0.6, so m = 0.06, v = 0.00036.
		{"adam L2", Config{Rule: Adam}, 0.1, []float64{0.5}, []float64{1 - adamStep(0.06, 0.00036, 1)}},
		{"adamw", Config{Rule: AdamW}, 0.1, []float64{0.5, -1},
			[]float64{adamw1, adamw1*(1-0.1*0.1) - adamStep(-0.055, 0.00124975, 2)}},
		{"amsgrad", Config{Rule: AMSGrad}, 0, []float64{1, 0.01}, []float64{ams1, ams1 - adamStep(0.091, 0.001, 2)}},
		{"adam without the max", Config{Rule: Adam}, 0, []float64{1, 0.01}, []float64{ams1, ams1 - adamStep(0.091, 0.0009991, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState[float64](tc.cfg, 1)
			x := []float64{1}
			for i, g := range tc.grads {
				s.Step(x, x, []float64{g}, 0.1, tc.decay)
				if math.Abs(x[0]-tc.want[i]) > 1e-12 {
					t.Fatalf("after step %d: x = %.17g, want %.17g", i+1, x[0], tc.want[i])
				}
			}
		})
	}
}

// configs covers every rule and SGD's momentum forms, each with weight decay.
var configs = []struct {
	name string
	cfg  Config
}{
	{"sgd", Config{Rule: SGD}},
	{"momentum", Config{Rule: SGD, Momentum: 0.9}},
	{"nesterov", Config{Rule: SGD, Momentum: 0.9, Nesterov: true}},
	{"adam", Config{Rule: Adam}},
	{"adamw", Config{Rule: AdamW}},
	{"amsgrad", Config{Rule: AMSGrad}},
}

const decay = 0.01

// randomSteps returns steps gradients of n values, and n starting values,
// all exactly representable in float32.
func randomSteps(seed uint64, steps, n int) (x []float64, grads [][]float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	draw := func() []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(float32(rng.NormFloat64()))
		}
		return v
	}
	x = draw()
	for range steps {
		grads = append(grads, draw())
	}
	return x, grads
}

// to32 rounds v to float32 (exactly, for randomSteps's values).
func to32(v []float64) []float32 {
	r := make([]float32, len(v))
	for i, f := range v {
		r[i] = float32(f)
	}
	return r
}

// TestBaseAliasing checks that stepping from a separate base gives exactly
// what stepping in place does, and leaves the base alone.
func TestBaseAliasing(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			x, grads := randomSteps(1, 4, 8)
			inPlace, apart := NewState[float64](c.cfg, len(x)), NewState[float64](c.cfg, len(x))
			y := slices.Clone(x)
			for _, g := range grads {
				base := slices.Clone(y)
				out := []float64{math.NaN(), 1, 2, 3, 4, 5, 6, 7} // overwritten, never read
				apart.Step(out, base, g, 0.05, decay)
				if !slices.Equal(base, y) {
					t.Fatal("Step wrote to base")
				}
				inPlace.Step(x, x, g, 0.05, decay)
				if !slices.Equal(out, x) {
					t.Fatalf("from a separate base %v, in place %v", out, x)
				}
				y = out
			}
		})
	}
}

// TestFloat32MatchesFloat64 checks that the float32 instantiation is the
// float64 one rounded: exactly on the first step (both compute in float64
// from the same inputs and round once) except with momentum (PyTorch steps
// by the momentum buffer as stored, so float32 rounds it first), and to a
// few float32 roundings after it (parameters and buffers were rounded in
// between).
func TestFloat32MatchesFloat64(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			x64, grads := randomSteps(2, 10, 64)
			s32, s64 := NewState[float32](c.cfg, len(x64)), NewState[float64](c.cfg, len(x64))
			x32 := to32(x64)
			for step, g := range grads {
				s32.Step(x32, x32, to32(g), 0.05, decay)
				s64.Step(x64, x64, g, 0.05, decay)
				for i := range x64 {
					if step == 0 && c.cfg.Momentum == 0 && x32[i] != float32(x64[i]) {
						t.Fatalf("first step, x[%d]: float32 %v, float64 %v rounded %v", i, x32[i], x64[i], float32(x64[i]))
					}
					if d := math.Abs(float64(x32[i]) - x64[i]); d > 1e-6*max(1, math.Abs(x64[i])) {
						t.Fatalf("step %d, x[%d]: float32 %v, float64 %v", step+1, i, x32[i], x64[i])
					}
				}
			}
		})
	}
}

// TestStateRoundTrip checks that a state restored from another's buffers
// and step count continues exactly as the original, and that each rule
// keeps the buffers PyTorch's optimiser of that name does.
func TestStateRoundTrip(t *testing.T) {
	names := map[string][]string{
		"sgd":      nil,
		"momentum": {"momentum_buffer"},
		"nesterov": {"momentum_buffer"},
		"adam":     {"exp_avg", "exp_avg_sq"},
		"adamw":    {"exp_avg", "exp_avg_sq"},
		"amsgrad":  {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			x, grads := randomSteps(3, 4, 8)
			a := NewState[float32](c.cfg, len(x))
			xa := to32(x)
			step := func(s *State[float32], x []float32, grad []float64) { s.Step(x, x, to32(grad), 0.05, decay) }
			for _, grad := range grads[:3] {
				step(a, xa, grad)
			}
			b := NewState[float32](c.cfg, len(x))
			var got []string
			for i, buf := range b.Buffers() {
				got = append(got, buf.Name)
				copy(buf.Data, a.Buffers()[i].Data)
			}
			if !slices.Equal(got, names[c.name]) {
				t.Fatalf("buffers %v, want %v", got, names[c.name])
			}
			b.Steps = a.Steps
			xb := slices.Clone(xa)
			step(a, xa, grads[3])
			step(b, xb, grads[3])
			if !slices.Equal(xa, xb) {
				t.Errorf("restored state stepped to %v, the original to %v", xb, xa)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{Rule: Adam}, true},
		{Config{Rule: SGD, Momentum: 0.9, Nesterov: true}, true},
		{Config{Rule: "rmsprop"}, false},
		{Config{}, false},
		{Config{Rule: SGD, Momentum: 1}, false},
		{Config{Rule: SGD, Momentum: math.NaN()}, false},
		{Config{Rule: SGD, Nesterov: true}, false},
		{Config{Rule: Adam, Beta1: 1}, false},
		{Config{Rule: Adam, Beta2: -0.5}, false},
	} {
		if err := c.cfg.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: error %v", c.cfg, err)
		}
	}
}
