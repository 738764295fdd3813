package vec

import (
	"fmt"
	"testing"
)

// BenchmarkKernels times every kernel on L1-resident slices at each level.
func BenchmarkKernels(b *testing.B) {
	const n = 4096
	x, y, z := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i%7)-3, float32(i%5)-2
	}
	bits := make([]uint64, n/64)
	var sink float32
	for _, bc := range []struct {
		name    string
		streams int // slices read or written, for bytes per call
		run     func()
	}{
		{"Axpy", 3, func() { Axpy(0.5, x, y) }},
		{"Scale", 2, func() { Scale(1, y) }},
		{"Add", 3, func() { Add(z, x, y) }},
		{"Sub", 3, func() { Sub(z, x, y) }},
		{"Mul", 3, func() { Mul(z, x, y) }},
		{"Dot", 2, func() { sink += Dot(x, y) }},
		{"Sum", 1, func() { sink += Sum(x) }},
		{"Triad", 3, func() { Triad(z, x, y, 2) }},
		{"ReLU", 2, func() { ReLU(z, x) }},
		{"ReLUBackward", 3, func() { ReLUBackward(z, y, x) }},
		{"SignBits", 1, func() { SignBits(bits, x) }},        // and a bit per value
		{"KeepByBits", 2, func() { KeepByBits(z, bits, 1) }}, // and a bit per value
	} {
		for _, l := range levels() {
			b.Run(fmt.Sprintf("%s/%v", bc.name, l), func(b *testing.B) {
				useLevel(b, l)
				b.SetBytes(int64(bc.streams * 4 * n))
				for b.Loop() {
					bc.run()
				}
			})
		}
	}
	_ = sink
}

// BenchmarkTriadBandwidth measures STREAM triad bandwidth over 3 × 128 MB.
func BenchmarkTriadBandwidth(b *testing.B) {
	best := 0.0
	for b.Loop() {
		best = max(best, TriadBandwidth(32<<20, 5))
	}
	b.ReportMetric(best, "GB/s")
}
