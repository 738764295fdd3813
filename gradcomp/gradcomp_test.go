package gradcomp

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/comm"
)

func newMethod(t *testing.T, spec string, shapes []Shape, workers int) Method {
	t.Helper()
	m, err := New(spec, Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Init(shapes, workers); err != nil {
		t.Fatal(err)
	}
	return m
}

func one() comm.Communicator { return comm.NewGroup(1).Comm(0) }

func randomVec(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func stateOf(m Method, name string) []float32 {
	for _, s := range m.State() {
		if s.Name == name {
			return s.Data
		}
	}
	return nil
}

func TestTopKSendsTheLargestAndKeepsTheRest(t *testing.T) {
	shapes := []Shape{{2, 5}, {1, 4}}
	in := []float32{0.1, -3, 0.2, 2, -0.05, 1, 0, -0.5, 4, 0.3 /* first */, -1, 0.5, 0.25, 2 /* second */, 9 /* loss */}
	m := newMethod(t, "topk:0.3", shapes, 1) // k = 3 of 10, 2 of 4
	g := slices.Clone(in)
	if err := m.Reduce(one(), "grad", g); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, -3, 0, 2, 0, 0, 0, 0, 4, 0, -1, 0, 0, 2, 9}
	if !slices.Equal(g, want) {
		t.Fatalf("sent %v, want %v", g, want)
	}
	res := stateOf(m, "residual")
	for i := range res {
		if res[i]+g[i] != in[i] {
			t.Errorf("value %d: residual %v + sent %v != %v", i, res[i], g[i], in[i])
		}
	}
}

// Scaled, top-k prefers a small value whose gradients are small to a
// larger one whose gradients are large: the small one has waited longer
// in units of its own gradient. It sends the chosen values as they are.
func TestTopKScaledRanksByTheGradientScale(t *testing.T) {
	sends := func(spec string) [][]float32 {
		m := newMethod(t, spec, []Shape{{1, 2}}, 1)
		var out [][]float32
		for range 2 {
			g := []float32{1, 0.001, 0}
			if err := m.Reduce(one(), "grad", g); err != nil {
				t.Fatal(err)
			}
			out = append(out, g[:2])
		}
		return out
	}
	// Step 1: both have waited one step; ε puts index 1 just below index 0.
	// Step 2: 0.002 is two steps of its gradient, 1 only one.
	if got, want := sends("topk:0.5,scaled"), [][]float32{{1, 0}, {0, 0.002}}; !equal2(got, want) {
		t.Errorf("scaled sent %v, want %v", got, want)
	}
	if got, want := sends("topk:0.5"), [][]float32{{1, 0}, {1, 0}}; !equal2(got, want) {
		t.Errorf("plain sent %v, want %v", got, want)
	}
}

func equal2(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, func(x, y []float32) bool { return slices.Equal(x, y) })
}

// Scaled top-k is deterministic: two runs over the same gradients send the
// same bits and keep the same state.
func TestTopKScaledDeterministic(t *testing.T) {
	shapes := []Shape{{40, 13}, {1, 13}}
	n := paramSize(shapes) + 1
	run := func() ([]float32, []Tensor) {
		m := newMethod(t, "topk:0.05,scaled", shapes, 1)
		var sum []float32
		for step := range 20 {
			g := randomVec(uint64(step), n)
			for i := range g {
				g[i] *= float32(1 + i%7*i%7) // coordinates of different scales
			}
			if err := m.Reduce(one(), "grad", g); err != nil {
				t.Fatal(err)
			}
			sum = append(sum, g...)
		}
		return sum, m.State()
	}
	a, sa := run()
	b, sb := run()
	if !slices.Equal(a, b) {
		t.Fatal("two runs sent different values")
	}
	for i := range sa {
		if sa[i].Name != sb[i].Name || !slices.Equal(sa[i].Data, sb[i].Data) {
			t.Errorf("state %q differs", sa[i].Name)
		}
	}
	for _, s := range sa {
		if s.Name == "gradsq-steps" && s.Data[0] != 20 {
			t.Errorf("steps %v, want 20", s.Data)
		}
	}
}

func TestKthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(50)
		keys := make([]uint32, n)
		for i := range keys {
			keys[i] = uint32(rng.IntN(1 + trial%10*3)) // many ties
		}
		k := 1 + rng.IntN(n)
		sorted := slices.Clone(keys)
		slices.Sort(sorted)
		if got, want := kthLargest(slices.Clone(keys), k), sorted[n-k]; got != want {
			t.Fatalf("%v, k=%d: got %d, want %d", keys, k, got, want)
		}
	}
}

// With a constant gradient, error feedback sends everything in the end:
// the residual stays bounded while the sums grow.
func TestErrorFeedbackCatchesUp(t *testing.T) {
	shapes := []Shape{{8, 6}, {1, 6}}
	grad := randomVec(3, 54)
	for _, spec := range []string{"topk:0.05", "topk:0.05,scaled", "quant4", "powersgd:1"} {
		t.Run(spec, func(t *testing.T) {
			m := newMethod(t, spec, shapes, 1)
			sent := make([]float64, len(grad))
			const steps = 400
			for range steps {
				g := append(slices.Clone(grad), 0)
				if err := m.Reduce(one(), "grad", g); err != nil {
					t.Fatal(err)
				}
				for i := range sent {
					sent[i] += float64(g[i])
				}
			}
			var num, den float64
			for i, v := range grad {
				d := steps*float64(v) - sent[i]
				num, den = num+d*d, den+steps*steps*float64(v)*float64(v)
			}
			if rel := math.Sqrt(num / den); rel > 0.05 {
				t.Errorf("the sum sent is %.3f (relative) away from the gradients' sum after %d steps", rel, steps)
			}
			// The residual is what is still missing from the sum.
			if res := stateOf(m, "residual"); strings.HasPrefix(spec, "topk") {
				for i, r := range res {
					if d := steps*float64(grad[i]) - sent[i] - float64(r); math.Abs(d) > 1e-3*steps {
						t.Errorf("value %d: gradients' sum − sent − residual = %v", i, d)
					}
				}
			}
		})
	}
}

func TestErrorFeedbackOffLosesTheRest(t *testing.T) {
	m := newMethod(t, "topk:0.25,noef", []Shape{{1, 4}}, 1)
	for range 3 {
		g := []float32{1, 2, 3, 4}
		if err := m.Reduce(one(), "grad", g); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g, []float32{0, 0, 0, 4}) {
			t.Fatalf("without error feedback sent %v, want only the largest", g)
		}
	}
	if m.State() != nil {
		t.Errorf("state %v without error feedback", m.State())
	}
}

// DGC's momentum correction sends the top-k of the accumulated velocity.
func TestTopKMomentumCorrection(t *testing.T) {
	m, err := New("topk:0.5", Options{Momentum: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Init([]Shape{{1, 2}}, 1); err != nil {
		t.Fatal(err)
	}
	// step 1: u = (1, 0.8), v = (1, 0.8): send 1, keep v = (0, 0.8), u = (0, 0.8)
	// step 2: u = (1, 1.2), v = (1, 2.0): send 2.0, keep v = (1, 0), u = (1, 0)
	// step 3: u = (1.5, 0.8), v = (2.5, 0.8): send 2.5
	want := [][]float32{{1, 0}, {0, 2}, {2.5, 0}}
	for step, w := range want {
		g := []float32{1, 0.8}
		if err := m.Reduce(one(), "grad", g); err != nil {
			t.Fatal(err)
		}
		for i := range g {
			if math.Abs(float64(g[i]-w[i])) > 1e-6 {
				t.Fatalf("step %d: sent %v, want %v", step+1, g, w)
			}
		}
	}
}

func TestPowerSGDReconstructsLowRank(t *testing.T) {
	const rows, cols = 20, 12
	a, b := randomVec(1, rows*2), randomVec(2, cols*2)
	low := make([]float32, rows*cols)
	for i := range rows {
		for j := range cols {
			low[i*cols+j] = a[2*i]*b[2*j] + a[2*i+1]*b[2*j+1]
		}
	}
	bias := randomVec(3, cols)
	err := comm.Run(4, func(c comm.Communicator) error {
		m := newMethod(t, "powersgd:2", []Shape{{rows, cols}, {1, cols}}, 4)
		scale := float32(c.Rank() + 1) // the workers' sum is 10·low, still rank 2
		for step := range 3 {
			g := make([]float32, 0, rows*cols+cols+1)
			for _, v := range low {
				g = append(g, scale*v)
			}
			g = append(g, bias...)
			g = append(g, scale)
			if err := m.Reduce(c, "grad", g); err != nil {
				return err
			}
			for i, v := range low {
				if d := math.Abs(float64(g[i] - 10*v)); d > 1e-4*(1+math.Abs(float64(10*v))) {
					t.Errorf("step %d, value %d: %v, want %v", step, i, g[i], 10*v)
					return nil
				}
			}
			for j, v := range bias {
				if g[rows*cols+j] != 4*v {
					t.Errorf("step %d: bias %d is %v, want %v exactly", step, j, g[rows*cols+j], 4*v)
				}
			}
			if g[len(g)-1] != 10 {
				t.Errorf("step %d: loss %v, want 10", step, g[len(g)-1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestQuantisationErrorWithinHalfAStep(t *testing.T) {
	for _, bits := range []int{8, 4} {
		spec := map[int]string{8: "quant8,noef", 4: "quant4,noef"}[bits]
		n := 3*quantChunk + 17
		in := randomVec(uint64(bits), n)
		in[5], in[300] = 0, 0 // zero stays zero
		m := newMethod(t, spec, []Shape{{1, n}}, 1)
		g := slices.Clone(in)
		if err := m.Reduce(one(), "grad", g); err != nil {
			t.Fatal(err)
		}
		for off := 0; off < n; off += quantChunk {
			chunk := in[off:min(off+quantChunk, n)]
			step := math.Max(float64(slices.Max(chunk)), -float64(slices.Min(chunk))) / float64(int(1)<<(bits-1)-1)
			for i, v := range chunk {
				if v == 0 && g[off+i] != 0 {
					t.Fatalf("%s: zero became %v", spec, g[off+i])
				}
				if d := math.Abs(float64(g[off+i] - v)); d > step/2*(1+1e-5)+1e-7 {
					t.Fatalf("%s: value %d off by %v, more than half the step %v", spec, off+i, d, step)
				}
			}
		}
	}
}

// Every worker ends with the same bits, whatever it sent; the loss at the
// end is summed exactly.
func TestWorkersAgree(t *testing.T) {
	shapes := []Shape{{30, 16}, {1, 16}, {16, 7}, {1, 7}}
	n := paramSize(shapes) + 1
	for _, spec := range []string{"none", "topk:0.01", "topk:0.1,noef", "topk:0.01,scaled", "topk:0.1,noef,scaled", "quant8", "quant4", "powersgd:2", "powersgd:1,noef"} {
		t.Run(spec, func(t *testing.T) {
			out := make([][]float32, 4)
			err := comm.Run(4, func(c comm.Communicator) error {
				m := newMethod(t, spec, shapes, 4)
				var g []float32
				for step := range 3 {
					g = randomVec(uint64(10*c.Rank()+step), n)
					g[n-1] = float32(c.Rank() + 1)
					if err := m.Reduce(c, "grad", g); err != nil {
						return err
					}
				}
				out[c.Rank()] = g
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for r := 1; r < 4; r++ {
				for i := range out[0] {
					if math.Float32bits(out[r][i]) != math.Float32bits(out[0][i]) {
						t.Fatalf("rank %d differs from rank 0 at %d: %v vs %v", r, i, out[r][i], out[0][i])
					}
				}
			}
			if out[0][n-1] != 10 {
				t.Errorf("loss %v, want 10", out[0][n-1])
			}
		})
	}
}

func TestNoneIsTheAllReduce(t *testing.T) {
	const n = 1000
	err := comm.Run(3, func(c comm.Communicator) error {
		m := newMethod(t, "none", []Shape{{10, 99}}, 3)
		g := randomVec(uint64(c.Rank()), n+1)
		want := slices.Clone(g)
		if err := c.AllReduce("ref", want); err != nil {
			return err
		}
		if err := m.Reduce(c, "grad", g); err != nil {
			return err
		}
		if !slices.Equal(g, want) {
			t.Errorf("rank %d: none differs from the all-reduce", c.Rank())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A method restored from another's state continues exactly as it would.
func TestStateRestores(t *testing.T) {
	shapes := []Shape{{12, 9}, {1, 9}}
	n := paramSize(shapes) + 1
	for _, spec := range []string{"topk:0.1", "topk:0.1,scaled", "topk:0.1,scaled,noef", "quant4", "powersgd:2"} {
		t.Run(spec, func(t *testing.T) {
			a := newMethod(t, spec, shapes, 1)
			for step := range 3 {
				if err := a.Reduce(one(), "grad", randomVec(uint64(step), n)); err != nil {
					t.Fatal(err)
				}
			}
			b := newMethod(t, spec, shapes, 1)
			var saved []Tensor
			for _, s := range a.State() {
				saved = append(saved, Tensor{s.Name, slices.Clone(s.Data)})
			}
			if err := b.Restore(saved); err != nil {
				t.Fatal(err)
			}
			ga, gb := randomVec(9, n), randomVec(9, n)
			if err := a.Reduce(one(), "grad", ga); err != nil {
				t.Fatal(err)
			}
			if err := b.Reduce(one(), "grad", gb); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ga, gb) {
				t.Errorf("the restored method reduced differently")
			}
			if err := b.Restore(saved[1:]); err == nil {
				t.Errorf("restoring a partial state succeeded")
			}
		})
	}
}

// Top-k at 1% sends far fewer bytes than the all-reduce.
func TestTopKBytes(t *testing.T) {
	shapes := []Shape{{500, 64}, {1, 64}, {64, 10}, {1, 10}}
	n := paramSize(shapes) + 1
	sent := map[string]int64{}
	for _, spec := range []string{"none", "topk:0.01", "topk:0.01,scaled", "powersgd:2", "quant8"} {
		err := comm.Run(4, func(c comm.Communicator) error {
			m := newMethod(t, spec, shapes, 4)
			if err := m.Reduce(c, "grad", randomVec(uint64(c.Rank()), n)); err != nil {
				return err
			}
			if c.Rank() == 0 {
				sent[spec] = c.Stats().Site("grad").BytesSent
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("bytes sent by rank 0: %v", sent)
	if r := float64(sent["none"]) / float64(sent["topk:0.01"]); r < 10 {
		t.Errorf("topk:0.01 sent %d bytes against %d: only %.1f× fewer", sent["topk:0.01"], sent["none"], r)
	}
	if sent["topk:0.01,scaled"] != sent["topk:0.01"] {
		t.Errorf("topk:0.01,scaled sent %d bytes, topk:0.01 %d", sent["topk:0.01,scaled"], sent["topk:0.01"])
	}
	if sent["powersgd:2"] >= sent["none"]/5 || sent["quant8"] >= sent["none"] {
		t.Errorf("bytes sent: %v", sent)
	}
}

func TestBadSpecs(t *testing.T) {
	for _, spec := range []string{"", "topk", "topk:0", "topk:1.5", "topk:x", "powersgd", "powersgd:0", "powersgd:1.5",
		"quant8:2", "quant2", "none:1", "zip", "topk:0.1,ef", "topk:0.1,noef,noef", "topk:0.1,", "topk:0.1,scaled,scaled",
		"powersgd:2,scaled", "quant8,scaled", "none,scaled"} {
		err := Check(spec)
		if err == nil {
			t.Errorf("%q accepted", spec)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: a multi-line error: %v", spec, err)
		}
	}
	for _, spec := range []string{"none", "topk:0.01", "topk:1", "powersgd:4", "quant8", "quant4,noef", "topk:0.01,scaled", "topk:0.01,noef,scaled"} {
		if err := Check(spec); err != nil {
			t.Errorf("%q: %v", spec, err)
		}
	}
	// A method's String is a spec that gives it back.
	for spec, want := range map[string]string{"topk:0.01,noef,scaled": "topk:0.01,scaled,noef", "topk:0.01,scaled": "topk:0.01,scaled", "powersgd:2,noef": "powersgd:2,noef"} {
		m, err := New(spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m.String() != want {
			t.Errorf("%s: String %q, want %q", spec, m.String(), want)
		}
		if again, err := New(m.String(), Options{}); err != nil || again.String() != want {
			t.Errorf("%s: String %q does not parse back: %v", spec, m.String(), err)
		}
	}
	for spec, want := range map[string]float64{"topk:0.1": 0.9, "topk:0.1,noef": 0, "powersgd:2": 0, "quant8": 0} {
		m, err := New(spec, Options{Momentum: 0.9})
		if err != nil {
			t.Fatal(err)
		}
		if got := MomentumOf(m); got != want {
			t.Errorf("%s: accumulates momentum %v, want %v", spec, got, want)
		}
	}
	if _, err := New("topk:0.1", Options{Momentum: 1}); err == nil {
		t.Errorf("momentum 1 accepted")
	}
}

// Scaled top-k's ranking key of every coordinate is |v| / (√v̂ + ε), v̂
// the bias-corrected moving average (Adam's β₂) of that coordinate's own
// squared gradients, not of the accumulated values, nor another
// parameter's.
func TestTopKScaledKeys(t *testing.T) {
	shapes := []Shape{{1, 3}, {2, 2}}
	m := newMethod(t, "topk:0.25,scaled", shapes, 1).(*topK)
	const beta = 0.999
	sq := make([]float64, 7)
	for step := 1; step <= 3; step++ {
		g := randomVec(uint64(step), 7)
		for i := range g {
			g[i] *= float32(1 + 3*i) // a different scale at each coordinate
		}
		v := slices.Clone(stateOf(m, "residual"))
		for i, x := range g {
			v[i] += x
			sq[i] = beta*sq[i] + (1-beta)*float64(x)*float64(x)
		}
		if err := m.Reduce(one(), "grad", g); err != nil {
			t.Fatal(err)
		}
		c := 1 - math.Pow(beta, float64(step))
		for j, key := range m.keys { // the last parameter's, at offset 3
			i := 3 + j
			want := math.Abs(float64(v[i])) / (math.Sqrt(sq[i]/c) + 1e-8)
			if got := float64(math.Float32frombits(key)); math.Abs(got-want) > 1e-4*want {
				t.Errorf("step %d, coordinate %d: key %v, want %v", step, i, got, want)
			}
		}
	}
}

// A non-finite gradient entry (NaN, ±∞) adds nothing to scaled top-k's
// average of squared gradients, as a zero would: the steps after it rank
// and send as in a run whose gradient had zeros there, rather than that
// coordinate being ranked first (NaN) or last (∞) for the rest of the run.
func TestTopKScaledAverageSkipsNonFinite(t *testing.T) {
	shapes := []Shape{{2, 4}}
	inf := float32(math.Inf(1))
	bad := map[int]float32{1: float32(math.NaN()), 4: inf, 6: -inf}
	run := func(poison bool) ([][]float32, []float32) {
		m := newMethod(t, "topk:0.25,scaled,noef", shapes, 1)
		var sent [][]float32
		for step := range 6 {
			g := randomVec(uint64(10+step), 9)
			for i := range g {
				g[i] *= float32(1 + i%3*5) // coordinates of different scales
			}
			if step == 2 {
				for i, x := range bad {
					if g[i] = 0; poison {
						g[i] = x
					}
				}
			}
			if err := m.Reduce(one(), "grad", g); err != nil {
				t.Fatal(err)
			}
			if step > 2 {
				sent = append(sent, g)
			}
		}
		return sent, stateOf(m, "gradsq")
	}
	got, gotSq := run(true)
	want, wantSq := run(false)
	if !equal2(got, want) {
		t.Errorf("after a non-finite gradient sent %v, with zeros there %v", got, want)
	}
	if !slices.Equal(gotSq, wantSq) {
		t.Errorf("average of squares %v, with zeros there %v", gotSq, wantSq)
	}

	// A finite gradient whose square overflows float32 saturates the
	// average at the largest float32, which later gradients decay.
	m := newMethod(t, "topk:0.5,scaled", []Shape{{1, 2}}, 1)
	for step, g := range [][]float32{{1e30, 1, 0}, {1, 1, 0}} {
		if err := m.Reduce(one(), "grad", g); err != nil {
			t.Fatal(err)
		}
		sq := stateOf(m, "gradsq")
		if want := float32(math.MaxFloat32 * math.Pow(0.999, float64(step))); math.Abs(float64(sq[0]-want)) > 1e-6*float64(want) {
			t.Errorf("step %d: average of squares %v after a gradient of 1e30, want %v", step, sq[0], want)
		}
	}
}
