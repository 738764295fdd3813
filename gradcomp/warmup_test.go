package gradcomp

import (
	"math"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/comm"
)

// During its warm-up epochs a method sends exactly the all-reduce's bytes
// and gets its sums, bit for bit; afterwards it compresses as the method
// without a warm-up does from its first step (its residuals are still
// zero), with the method's bytes.
func TestWarmupIsTheAllReduceThenCompresses(t *testing.T) {
	shapes := []Shape{{60, 20}, {1, 20}, {20, 5}, {1, 5}}
	n := paramSize(shapes) + 1
	for _, spec := range []string{"topk:0.01", "topk:0.01,scaled", "powersgd:2", "quant8", "quant4,noef"} {
		err := comm.Run(4, func(c comm.Communicator) error {
			warm := newMethod(t, spec+",warmup:2", shapes, 4)
			cold := newMethod(t, spec, shapes, 4)
			exact := newMethod(t, "none", shapes, 4)
			bytes := func(m Method, g []float32) (int64, error) {
				before := c.Stats().Site("grad").BytesSent
				err := m.Reduce(c, "grad", g)
				return c.Stats().Site("grad").BytesSent - before, err
			}
			for epoch := 1; epoch <= 3; epoch++ {
				SetEpoch(warm, epoch)
				g := randomVec(uint64(10*epoch+c.Rank()), n)
				gw, want := slices.Clone(g), slices.Clone(g)
				sent, err := bytes(warm, gw)
				if err != nil {
					return err
				}
				ref := exact
				if epoch == 3 {
					ref = cold
				}
				wantSent, err := bytes(ref, want)
				if err != nil {
					return err
				}
				if sent != wantSent {
					t.Errorf("%s, epoch %d: sent %d bytes, want %s's %d", spec, epoch, sent, ref, wantSent)
				}
				// Scaled top-k averaged the warm-up's squares: its
				// ranking, not its bytes, differs from a cold start.
				if epoch == 3 && spec == "topk:0.01,scaled" {
					continue
				}
				if !slices.Equal(gw, want) {
					t.Errorf("%s, epoch %d: the sum differs from %s's", spec, epoch, ref)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A trainer that never says the epoch gets the first epoch's behaviour,
// and an epoch past the warm-up compresses.
func TestWarmupWithoutEpoch(t *testing.T) {
	shapes := []Shape{{8, 8}}
	m := newMethod(t, "topk:0.1,warmup:1", shapes, 1)
	g := randomVec(1, 65)
	want := slices.Clone(g)
	if err := m.Reduce(one(), "grad", g); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g, want) {
		t.Errorf("before any epoch: the sum is not exact")
	}
	SetEpoch(m, 2)
	if err := m.Reduce(one(), "grad", g); err != nil {
		t.Fatal(err)
	}
	nonzero := 0
	for _, v := range g[:64] {
		if v != 0 {
			nonzero++
		}
	}
	if nonzero != 7 {
		t.Errorf("epoch 2: %d values sent, want top-k's 7", nonzero)
	}
}

// With Deep Gradient Compression's momentum correction the optimiser has
// no momentum, so the warm-up all-reduces each worker's velocity
// u = m·u + g, and compression carries it on.
func TestWarmupKeepsTheMomentum(t *testing.T) {
	m, err := New("topk:0.5,warmup:2", Options{Momentum: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if MomentumOf(m) != 0.5 || !IsDelayed(m) {
		t.Fatalf("the warm-up hides the method's momentum %v or delay %v", MomentumOf(m), IsDelayed(m))
	}
	if err := m.Init([]Shape{{1, 2}}, 1); err != nil {
		t.Fatal(err)
	}
	// epoch 1: u = (1, 0.8), sent; epoch 2: u = (1.5, 1.2), sent;
	// epoch 3: u = (1.75, 1.4), v = u: send 1.75, keep (0, 1.4).
	want := [][]float32{{1, 0.8}, {1.5, 1.2}, {1.75, 0}}
	for i, w := range want {
		SetEpoch(m, i+1)
		g := []float32{1, 0.8, 3}
		if err := m.Reduce(one(), "grad", g); err != nil {
			t.Fatal(err)
		}
		for j := range w {
			if math.Abs(float64(g[j]-w[j])) > 1e-6 {
				t.Fatalf("epoch %d: sent %v, want %v", i+1, g[:2], w)
			}
		}
		if g[2] != 3 {
			t.Errorf("epoch %d: the loss became %v", i+1, g[2])
		}
	}
	if r := stateOf(m, "residual"); math.Abs(float64(r[1])-1.4) > 1e-6 || r[0] != 0 {
		t.Errorf("residual %v, want [0 1.4]", r)
	}
}

func TestWarmupSpecs(t *testing.T) {
	for _, spec := range []string{"topk:0.1,warmup", "topk:0.1,warmup:", "topk:0.1,warmup:-1", "topk:0.1,warmup:x",
		"topk:0.1,warmup:1,warmup:2", "none,warmup:1", "topk:0.1,warmup:1.5"} {
		if err := Check(spec); err == nil {
			t.Errorf("%q accepted", spec)
		}
	}
	for spec, want := range map[string]string{
		"topk:0.01,warmup:5,scaled": "topk:0.01,scaled,warmup:5",
		"powersgd:2,warmup:10":      "powersgd:2,warmup:10",
		"quant8,warmup:3,noef":      "quant8,noef,warmup:3",
		"powersgd:2,warmup:0":       "powersgd:2",
		"none,warmup:0":             "none",
	} {
		m, err := New(spec, Options{})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if m.String() != want {
			t.Errorf("%s: String %q, want %q", spec, m.String(), want)
		}
		if again, err := New(m.String(), Options{}); err != nil || again.String() != want {
			t.Errorf("%s: String %q does not parse back: %v", spec, m.String(), err)
		}
	}
	if m, _ := New("powersgd:2,warmup:7", Options{}); WarmupEpochs(m) != 7 {
		t.Errorf("WarmupEpochs %d, want 7", WarmupEpochs(m))
	}
}

// Scaled top-k averages the squares of the warm-up's gradients too, as
// it would have compressing them.
func TestWarmupAveragesScaledSquares(t *testing.T) {
	shapes := []Shape{{8, 8}}
	warm := newMethod(t, "topk:0.1,scaled,warmup:2", shapes, 1)
	cold := newMethod(t, "topk:0.1,scaled", shapes, 1)
	for epoch := 1; epoch <= 2; epoch++ {
		SetEpoch(warm, epoch)
		for _, m := range []Method{warm, cold} {
			if err := m.Reduce(one(), "grad", randomVec(uint64(epoch), 65)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range []string{"gradsq", "gradsq-steps"} {
		if !slices.Equal(stateOf(warm, name), stateOf(cold, name)) {
			t.Errorf("%s after the warm-up: %v, want %v", name, stateOf(warm, name), stateOf(cold, name))
		}
	}
}
