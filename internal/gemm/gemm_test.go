package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// withKernel runs f with kern as the active micro-kernel.
func withKernel(kern *microKernel, f func()) {
	saved := active
	active = kern
	defer func() { active = saved }()
	f()
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}

// TestMicroKernels checks each micro-kernel against its pure-Go twin.
func TestMicroKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kern := range kernels() {
		for _, k := range []int{0, 1, 2, 3, 4, 5, 7, 8, 13, 64, 257} {
			for _, astep := range []int{kern.mr, kern.mr + 5} { // packed, and strided as in Aᵀ
				for _, load := range []bool{false, true} {
					mr, nr := kern.mr, kern.nr
					ldc := nr + 3
					a := randSlice(rng, astep*k+1)
					b := randSlice(rng, nr*k+1)
					c := randSlice(rng, mr*ldc)
					want := append([]float32(nil), c...)
					kern.run(k, &a[0], astep, &b[0], &c[0], ldc, load, 0)
					microGo(mr, nr, k, a, astep, b, want, ldc, load)
					for i := range c {
						if !close32(c[i], want[i], k) {
							t.Fatalf("%s k=%d astep=%d load=%v: c[%d] = %v, want %v", kern.name, k, astep, load, i, c[i], want[i])
						}
					}
				}
			}
		}
	}
}

func close32(got, want float32, k int) bool {
	return math.Abs(float64(got-want)) <= 1e-5*float64(k+1)*(1+math.Abs(float64(want)))
}

// reference computes op(A)·op(B) (+ C) in float64.
func reference(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) []float64 {
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			if accumulate {
				s = float64(c[i*ldc+j])
			}
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			want[i*n+j] = s
		}
	}
	return want
}

type shape struct{ m, n, k, pad int }

func (s shape) String() string { return fmt.Sprintf("%dx%dx%d+%d", s.m, s.n, s.k, s.pad) }

// checkGemm runs Gemm with every micro-kernel on random operands of shape s,
// with row strides padded by s.pad, and compares C, including the padding
// that must stay untouched, with the float64 reference.
func checkGemm(t *testing.T, rng *rand.Rand, s shape, transA, transB, accumulate bool) {
	t.Helper()
	m, n, k := s.m, s.n, s.k
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+s.pad, bc+s.pad, n+s.pad
	a := randSlice(rng, max(0, ar*lda-s.pad))
	b := randSlice(rng, max(0, br*ldb-s.pad))
	orig := randSlice(rng, m*ldc)
	want := reference(transA, transB, m, n, k, a, lda, b, ldb, orig, ldc, accumulate)
	c := make([]float32, len(orig))
	for _, kern := range kernels() {
		copy(c, orig)
		withKernel(kern, func() { Gemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate) })
		for i := 0; i < m; i++ {
			for j := 0; j < ldc; j++ {
				got := c[i*ldc+j]
				if j >= n {
					if got != orig[i*ldc+j] {
						t.Fatalf("%s %v transA=%v transB=%v acc=%v: padding c[%d,%d] changed", kern.name, s, transA, transB, accumulate, i, j)
					}
					continue
				}
				w := want[i*n+j]
				if math.Abs(float64(got)-w) > 1e-5*float64(k+4)*(1+math.Abs(w)) {
					t.Fatalf("%s %v transA=%v transB=%v acc=%v: c[%d,%d] = %v, want %v", kern.name, s, transA, transB, accumulate, i, j, got, w)
				}
			}
		}
	}
}

func TestGemm(t *testing.T) {
	shapes := []shape{
		{0, 5, 3, 0}, {5, 0, 3, 1}, {4, 5, 0, 0}, {4, 5, 0, 2}, {1, 1, 1, 0},
		{7, 5, 3, 0}, {12, 32, 16, 0}, {13, 33, 17, 3}, {6, 16, 4, 1},
		{31, 61, 257, 5}, {144, 64, 256, 0}, {145, 97, 300, 7}, {293, 7, 11, 2},
		{3, 293, 101, 0},
		// Long reductions, split across workers; m ragged and not.
		{50, 37, 4099, 1}, {17, 40, 2053, 0}, {48, 40, 2100, 0},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 6 {
		shapes = append(shapes, shape{1 + rng.IntN(300), 1 + rng.IntN(300), 1 + rng.IntN(200), rng.IntN(9)})
	}
	for _, s := range shapes {
		for _, form := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, acc := range []bool{false, true} {
				checkGemm(t, rng, s, form[0], form[1], acc)
			}
		}
	}
}

func TestKernelName(t *testing.T) {
	switch Kernel() {
	case "avx512", "avx2", "generic":
	default:
		t.Errorf("Kernel() = %q", Kernel())
	}
}

func TestGemmAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name           string
		transA, transB bool
		m, n, k        int
	}{
		{"nn", false, false, 600, 64, 64},
		{"nt", false, true, 600, 64, 64},
		{"tn", true, false, 64, 64, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := randSlice(rng, tc.m*tc.k)
			b := randSlice(rng, tc.k*tc.n)
			c := make([]float32, tc.m*tc.n)
			lda, ldb := tc.k, tc.n
			if tc.transA {
				lda = tc.m
			}
			if tc.transB {
				ldb = tc.k
			}
			run := func() { Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, b, ldb, c, tc.n, false) }
			run()
			if allocs := testing.AllocsPerRun(10, run); allocs > 0 {
				t.Errorf("%v allocations per call, want 0", allocs)
			}
		})
	}
}

func TestGemmPanicsOnShortSlice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a too-short A")
		}
	}()
	Gemm(false, false, 4, 4, 4, make([]float32, 15), 4, make([]float32, 16), 4, make([]float32, 16), 4, false)
}
