package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// BenchmarkGemm times the GNN layer shapes: gemm_nn is X·W, gemm_nt is dY·Wᵀ
// and gemm_tn is the weight gradient Xᵀ·dY, for every micro-kernel.
func BenchmarkGemm(b *testing.B) {
	const rows = 100000
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kern := range kernels() {
		if kern == genericKernel && len(kernels()) > 1 {
			continue
		}
		for _, d := range []int{128, 256} {
			big1 := randSlice(rng, rows*d)
			big2 := randSlice(rng, rows*d)
			small := randSlice(rng, d*d)
			for _, tc := range []struct {
				form           string
				transA, transB bool
				m, n, k        int
				a, b, c        []float32
			}{
				{"gemm_nn", false, false, rows, d, d, big1, small, big2},
				{"gemm_tn", true, false, d, d, rows, big1, big2, small},
				{"gemm_nt", false, true, rows, d, d, big1, small, big2},
			} {
				name := fmt.Sprintf("%s/%s/%dx%d", kern.name, tc.form, rows, d)
				b.Run(name, func(b *testing.B) {
					lda, ldb := tc.k, tc.n
					if tc.transA {
						lda = tc.m
					}
					if tc.transB {
						ldb = tc.k
					}
					withKernel(kern, func() {
						b.ReportAllocs()
						cpu0 := sysstat.CPUTime().Seconds()
						for b.Loop() {
							Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.a, lda, tc.b, ldb, tc.c, tc.n, false)
						}
						flops := 2 * float64(tc.m) * float64(tc.n) * float64(tc.k)
						b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						if cpu := sysstat.CPUTime().Seconds() - cpu0; cpu > 0 {
							b.ReportMetric(flops*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
						}
					})
				})
			}
		}
	}
}

// BenchmarkGemmBF16 times GemmBF16 at BenchmarkGemm's shapes, beside the
// float32 Gemm with the active kernel in the same run.
func BenchmarkGemmBF16(b *testing.B) {
	const rows = 100000
	rng := rand.New(rand.NewPCG(9, 10))
	for _, d := range []int{128, 256} {
		big1, big2, small := randBF16(rng, rows*d), randBF16(rng, rows*d), randBF16(rng, d*d)
		out, outSmall := make([]float32, rows*d), make([]float32, d*d)
		f1, f2, fs := randSlice(rng, rows*d), randSlice(rng, rows*d), randSlice(rng, d*d)
		for _, tc := range []struct {
			form           string
			transA, transB bool
			m, n, k        int
		}{
			{"gemm_nn", false, false, rows, d, d},
			{"gemm_tn", true, false, d, d, rows},
			{"gemm_nt", false, true, rows, d, d},
		} {
			lda, ldb := tc.k, tc.n
			if tc.transA {
				lda = tc.m
			}
			if tc.transB {
				ldb = tc.k
			}
			a, bb, c, a32, b32 := big1, small, out, f1, fs
			if tc.transA {
				bb, c, b32 = big2, outSmall, f2
			}
			flops := 2 * float64(tc.m) * float64(tc.n) * float64(tc.k)
			b.Run(fmt.Sprintf("%s/%s/%dx%d", KernelBF16(), tc.form, rows, d), func(b *testing.B) {
				for b.Loop() {
					GemmBF16(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, bb, ldb, c, tc.n, false)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(fmt.Sprintf("fp32-%s/%s/%dx%d", Kernel(), tc.form, rows, d), func(b *testing.B) {
				for b.Loop() {
					Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, a32, lda, b32, ldb, c, tc.n, false)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
