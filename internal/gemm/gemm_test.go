package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGemmSmall(t *testing.T) {
	for _, tt := range []struct{ transA, transB bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		for _, acc := range []bool{false, true} {
			checkGemm(t, tt.transA, tt.transB, 7, 5, 3, acc)
		}
	}
}

func checkGemm(t *testing.T, transA, transB bool, m, n, k int, acc bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	a := make([]float32, ar*ac)
	b := make([]float32, br*bc)
	c := make([]float32, m*n)
	for i := range a {
		a[i] = rng.Float32()*2 - 1
	}
	for i := range b {
		b[i] = rng.Float32()*2 - 1
	}
	for i := range c {
		c[i] = rng.Float32()
	}
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			if acc {
				s = float64(c[i*n+j])
			}
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*ac+i]
				} else {
					av = a[i*ac+p]
				}
				if transB {
					bv = b[j*bc+p]
				} else {
					bv = b[p*bc+j]
				}
				s += float64(av) * float64(bv)
			}
			want[i*n+j] = s
		}
	}
	Gemm(transA, transB, m, n, k, a, ac, b, bc, c, n, acc)
	for i := range want {
		if math.Abs(float64(c[i])-want[i]) > 1e-4*float64(k+1) {
			t.Fatalf("c[%d] = %v, want %v", i, c[i], want[i])
		}
	}
}
