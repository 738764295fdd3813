package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/bf16"
)

// TestGemmRoundedIsGemmBF16OfTheRounded checks GemmRounded against
// GemmBF16 on operands rounded beforehand, bit for bit, with every bf16
// kernel, in every form, with padded strides (odd ones included), into
// C with and without accumulation, at shapes that split k, and at one
// wide enough that op(B) is packed a block of columns at a time.
func TestGemmRoundedIsGemmBF16OfTheRounded(t *testing.T) {
	shapes := []shape{
		{1, 1, 1, 0}, {7, 5, 3, 1}, {13, 33, 17, 3}, {31, 61, 257, 5},
		{145, 97, 513, 7}, {3, 293, 101, 0}, {40, 48, 1025, 2}, {50, 37, 4099, 1},
		{17, 40, 2053, 0},
		{7, 900, 2500, 1}, // op(B) packed in column blocks (splitRows' jc > 0)
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, kern := range bfKernels() {
		for _, s := range shapes {
			for _, form := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				for _, acc := range []bool{false, true} {
					withBF16Kernel(kern, func() { checkRounded(t, rng, kern.name, s, form[0], form[1], acc) })
				}
			}
		}
	}
}

func checkRounded(t *testing.T, rng *rand.Rand, kern string, s shape, transA, transB, acc bool) {
	t.Helper()
	ar, ac, br, bc := s.m, s.k, s.k, s.n
	if transA {
		ar, ac = s.k, s.m
	}
	if transB {
		br, bc = s.n, s.k
	}
	lda, ldb, ldc := ac+s.pad, bc+s.pad, s.n+s.pad
	a32, b32 := randSlice(rng, (ar-1)*lda+ac), randSlice(rng, (br-1)*ldb+bc)
	a16, b16 := make([]uint16, len(a32)), make([]uint16, len(b32))
	bf16.Encode(a16, a32)
	bf16.Encode(b16, b32)
	c0 := randSlice(rng, (s.m-1)*ldc+s.n)
	want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
	GemmBF16(transA, transB, s.m, s.n, s.k, a16, lda, b16, ldb, want, ldc, acc)
	GemmRounded(transA, transB, s.m, s.n, s.k, a32, lda, b32, ldb, got, ldc, acc)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s %v transA=%v transB=%v acc=%v: c[%d] = %v, GemmBF16 of the rounded operands %v", kern, s, transA, transB, acc, i, got[i], want[i])
		}
	}
}

// TestGemmRoundedAllocs checks that the rounding needs no allocation
// once the workspaces are warm, as GemmBF16 needs none, with every bf16
// kernel (the conversion one rounds Gemm's packed blocks: a CPU without
// bf16 instructions).
func TestGemmRoundedAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	const m, n, k = 600, 64, 63
	a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	for _, kern := range bfKernels() {
		for _, form := range []struct{ transA, transB bool }{{false, false}, {false, true}, {true, false}} {
			lda, ldb := k, n
			am, an := m, n
			if form.transA {
				lda = m
			}
			if form.transB {
				ldb = k
			}
			run := func() { GemmRounded(form.transA, form.transB, am, an, k, a, lda, b, ldb, c, n, false) }
			withBF16Kernel(kern, func() {
				run()
				if allocs := testing.AllocsPerRun(10, run); allocs > 0 {
					t.Errorf("%s transA=%v transB=%v: %v allocations a call", kern.name, form.transA, form.transB, allocs)
				}
			})
		}
	}
}

// BenchmarkTrainingProducts times the products of a mini-batch's first
// SAGE layer (150,000 destinations, 100 features, 256 outputs: forward
// a·W and the weight gradient aᵀ·dy) in float32 (Gemm) and rounded to
// bf16 as packed (GemmRounded).
func BenchmarkTrainingProducts(b *testing.B) {
	rng := rand.New(rand.NewPCG(35, 36))
	const rows, in, out = 150000, 100, 256
	a, w, dy := randSlice(rng, rows*in), randSlice(rng, in*out), randSlice(rng, rows*out)
	y, dw := make([]float32, rows*out), make([]float32, in*out)
	for _, p := range []struct {
		name string
		mul  func(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool)
	}{{"fp32", Gemm}, {"rounded", GemmRounded}} {
		b.Run(p.name+"/forward", func(b *testing.B) {
			for b.Loop() {
				p.mul(false, false, rows, out, in, a, in, w, out, y, out, false)
			}
			b.ReportMetric(2*rows*in*out/b.Elapsed().Seconds()*float64(b.N)/1e9, "GFLOP/s")
		})
		b.Run(p.name+"/weight-gradient", func(b *testing.B) {
			for b.Loop() {
				p.mul(true, false, in, out, rows, a, in, dy, out, dw, out, false)
			}
			b.ReportMetric(2*rows*in*out/b.Elapsed().Seconds()*float64(b.N)/1e9, "GFLOP/s")
		})
	}
}
