package spmm

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/internal/cpuid"
	"github.com/graft-gnn/graft/internal/vec"
)

// The benchmark matrix: 1,000,000 rows, 15 nonzeros per row at uniformly
// random columns, with values, times a dense 1,000,000 × 128 matrix.
const (
	benchRows  = 1_000_000
	benchDeg   = 15
	benchWidth = 128
)

var bench struct {
	once  sync.Once
	m     csr
	x, y  []float32
	triad float64 // GB/s, STREAM triad measured in the same process
}

func benchData(b testing.TB) {
	bench.once.Do(func() {
		rng := rand.New(rand.NewPCG(11, 12))
		m := csr{rows: benchRows, cols: benchRows, offsets: make([]int64, benchRows+1)}
		m.indices = make([]int32, benchRows*benchDeg)
		m.values = make([]float32, benchRows*benchDeg)
		for p := range m.indices {
			m.indices[p] = int32(rng.IntN(benchRows))
			m.values[p] = rng.Float32()
		}
		for i := range m.offsets {
			m.offsets[i] = int64(i * benchDeg)
		}
		bench.m = m
		bench.x = randomDense(rng, benchRows, benchWidth)
		bench.y = randomDense(rng, benchRows, benchWidth) // touched, so no page faults are timed
		bench.triad = vec.TriadBandwidth(32<<20, 5)
	})
	if b, ok := b.(*testing.B); ok {
		b.ResetTimer()
	}
}

// effectiveBytes counts the CSR arrays, every gathered row and the output once.
func effectiveBytes(m csr, width int) float64 {
	nnz := float64(len(m.indices))
	return 8*float64(m.rows+1) + 8*nnz + nnz*float64(width)*4 + float64(m.rows)*float64(width)*4
}

func benchLevels() []cpuid.Level {
	return levels()
}

func BenchmarkMulCSR(b *testing.B) {
	for _, l := range benchLevels() {
		b.Run(l.String(), func(b *testing.B) {
			benchData(b)
			useLevel(b, l)
			m := bench.m
			for b.Loop() {
				MulCSR(m.rows, m.offsets, m.indices, m.values, bench.x, benchWidth, benchWidth, bench.y, benchWidth, false)
			}
			gbs := effectiveBytes(m, benchWidth) * float64(b.N) / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(gbs, "GB/s")
			b.ReportMetric(bench.triad, "triad-GB/s")
			b.ReportMetric(gbs/bench.triad, "x-triad")
		})
	}
}

func BenchmarkMulCSRTrans(b *testing.B) {
	for _, l := range benchLevels() {
		b.Run(l.String(), func(b *testing.B) {
			benchData(b)
			useLevel(b, l)
			m := bench.m
			for b.Loop() {
				MulCSRTrans(m.rows, m.cols, m.offsets, m.indices, m.values, bench.x, benchWidth, benchWidth, bench.y, benchWidth, false)
			}
			gbs := effectiveBytes(m, benchWidth) * float64(b.N) / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(gbs, "GB/s")
			b.ReportMetric(bench.triad, "triad-GB/s")
		})
	}
}
