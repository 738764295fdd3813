package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// levels lists every kernel level this CPU and build can run, widest first.
func levels() []cpuid.Level {
	var ls []cpuid.Level
	for _, l := range []cpuid.Level{cpuid.AVX512, cpuid.AVX2, cpuid.Generic} {
		if l <= cpuid.Detected && kernelsFor(l).level == l {
			ls = append(ls, l)
		}
	}
	return ls
}

// useLevel switches the kernels for the rest of the test.
func useLevel(t testing.TB, l cpuid.Level) {
	saved := impl
	impl = kernelsFor(l)
	t.Cleanup(func() { impl = saved })
}

func randomSlice(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
		if i%11 == 5 {
			x[i] = 0
		}
	}
	return x
}

var lengths = func() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1000, 4096, 100003)
}()

// TestElementwise checks every element-wise kernel against its pure-Go twin,
// in place and out of place. Guard elements past the end must stay untouched.
func TestElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type op struct {
		name      string
		run, twin func(dst, a, b []float32) // dst starts as a copy of a where ops are in place
	}
	ops := []op{
		{"Axpy", func(d, a, b []float32) { Axpy(0.75, b, d) }, func(d, a, b []float32) { axpyGeneric(0.75, b, d) }},
		{"Scale", func(d, a, b []float32) { Scale(-1.5, d) }, func(d, a, b []float32) { scaleGeneric(-1.5, d) }},
		{"Add", func(d, a, b []float32) { Add(d, a, b) }, addGeneric},
		{"Sub", func(d, a, b []float32) { Sub(d, a, b) }, subGeneric},
		{"Mul", func(d, a, b []float32) { Mul(d, a, b) }, mulGeneric},
		{"Triad", func(d, a, b []float32) { Triad(d, a, b, 2.5) }, func(d, a, b []float32) { triadGeneric(d, a, b, 2.5) }},
		{"ReLU", func(d, a, b []float32) { ReLU(d, a) }, func(d, a, b []float32) { reluGeneric(d, a) }},
		{"ReLUBackward", func(d, a, b []float32) { ReLUBackward(d, a, b) }, reluBackwardGeneric},
		{"Add/alias a", func(d, a, b []float32) { copy(d, a); Add(d, d, b) }, addGeneric},
		{"Sub/alias b", func(d, a, b []float32) { copy(d, b); Sub(d, a, d) }, subGeneric},
		{"Mul/alias both", func(d, a, b []float32) { copy(d, a); Mul(d, d, d) }, func(d, a, b []float32) { mulGeneric(d, a, a) }},
		{"ReLU/in place", func(d, a, b []float32) { copy(d, a); ReLU(d, d) }, func(d, a, b []float32) { reluGeneric(d, a) }},
		{"ReLUBackward/alias dy", func(d, a, b []float32) { copy(d, a); ReLUBackward(d, d, b) }, reluBackwardGeneric},
	}
	for _, l := range levels() {
		useLevel(t, l)
		for _, n := range lengths {
			a, b := randomSlice(rng, n), randomSlice(rng, n)
			if n > 3 {
				a[1], b[2] = float32(math.NaN()), float32(math.Copysign(0, -1))
			}
			for _, o := range ops {
				got := append(append([]float32(nil), a...), 99) // guard element
				want := append(append([]float32(nil), a...), 99)
				o.run(got[:n], a, b)
				o.twin(want[:n], a, b)
				for i := range want {
					if g, w := got[i], want[i]; g != w && !(g != g && w != w) &&
						math.Abs(float64(g-w)) > 1e-6*(1+math.Abs(float64(w))) {
						t.Fatalf("%v %s n=%d: [%d] = %v, want %v", l, o.name, n, i, g, w)
					}
				}
			}
		}
	}
}

func TestReductions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range levels() {
		useLevel(t, l)
		for _, n := range lengths {
			x, y := randomSlice(rng, n), randomSlice(rng, n)
			var dot, sum, scale float64
			for i := range x {
				dot += float64(x[i]) * float64(y[i])
				sum += float64(x[i])
				scale += math.Abs(float64(x[i]))
			}
			tol := 1e-6 * (scale + 1)
			if got := Dot(x, y); math.Abs(float64(got)-dot) > tol {
				t.Fatalf("%v Dot n=%d = %v, want %v", l, n, got, dot)
			}
			if got := Sum(x); math.Abs(float64(got)-sum) > tol {
				t.Fatalf("%v Sum n=%d = %v, want %v", l, n, got, sum)
			}
		}
	}
}

func TestLengthMismatchPanics(t *testing.T) {
	a, b := make([]float32, 3), make([]float32, 4)
	for name, f := range map[string]func(){
		"Axpy": func() { Axpy(1, a, b) }, "Add": func() { Add(a, a, b) }, "Sub": func() { Sub(b, a, a) },
		"Mul": func() { Mul(a, b, a) }, "Dot": func() { Dot(a, b) }, "Triad": func() { Triad(a, a, b, 1) },
		"ReLU": func() { ReLU(a, b) }, "ReLUBackward": func() { ReLUBackward(a, a, b) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on length mismatch", name)
				}
			}()
			f()
		}()
	}
}

func TestTriadBandwidth(t *testing.T) {
	if gbs := TriadBandwidth(1<<16, 2); !(gbs > 0) {
		t.Fatalf("TriadBandwidth = %v, want > 0", gbs)
	}
}

func TestKernelName(t *testing.T) {
	want := fmt.Sprint(kernelsFor(cpuid.Detected).level)
	if got := Kernel(); got != want {
		t.Fatalf("Kernel() = %q, want %q", got, want)
	}
}

func TestLevelsIncludeDetected(t *testing.T) {
	ls := levels()
	if ls[0] != kernelsFor(cpuid.Detected).level {
		t.Fatalf("levels() = %v does not start at the detected level", ls)
	}
	t.Logf("testing kernels %v", ls)
}
