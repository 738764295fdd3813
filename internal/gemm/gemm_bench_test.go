package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

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

// BenchmarkGemmBF16 times GemmBF16 at BenchmarkGemm's shapes, on every
// kernel this CPU runs but the pure-Go ones, against the float32 Gemm with
// the active kernel, alternating the two call by call so that a shared
// machine's load falls on both. It reports each one's best rate, the ratio
// of the best wall times and the ratio of the process CPU time the two
// took in all (steadier when other processes crowd the cores). Comparing
// the kernels' ratios shows which one bestBF16Kernel should pick here.
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
			for _, kern := range bfKernels() {
				if kern == genericBF16 || kern == genericTiles {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/%dx%d", kern.name, tc.form, rows, d), func(b *testing.B) {
					saved := activeBF16
					activeBF16 = kern
					defer func() { activeBF16 = saved }()
					reportPair(b, flops,
						func() { Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, a32, lda, b32, ldb, c, tc.n, false) },
						func() { GemmBF16(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, bb, ldb, c, tc.n, false) })
				})
			}
		}
	}
}

// reportPair alternates f32 and f16 and reports their best GFLOP/s and
// the float32-over-bf16 ratios of the best wall time and of all CPU time.
func reportPair(b *testing.B, flops float64, f32, f16 func()) {
	reportAlternated(b, flops, "fp32", "bf16", f32, f16)
}

// reportAlternated alternates f0 and f1 and reports their best GFLOP/s,
// as name0 and name1, and the f0-over-f1 ratios of the best wall time and
// of all CPU time.
func reportAlternated(b *testing.B, flops float64, name0, name1 string, f0, f1 func()) {
	f0()
	f1()
	var best, cpu [2]float64
	best[0], best[1] = math.Inf(1), math.Inf(1)
	for b.Loop() {
		for i, f := range []func(){f0, f1} {
			c0, t0 := sysstat.CPUTime(), time.Now()
			f()
			best[i] = min(best[i], time.Since(t0).Seconds())
			cpu[i] += (sysstat.CPUTime() - c0).Seconds()
		}
	}
	b.ReportMetric(flops/best[0]/1e9, name0+"-GFLOP/s")
	b.ReportMetric(flops/best[1]/1e9, name1+"-GFLOP/s")
	b.ReportMetric(best[0]/best[1], "wall-ratio")
	if cpu[1] > 0 {
		b.ReportMetric(cpu[0]/cpu[1], "cpu-ratio")
	}
}
