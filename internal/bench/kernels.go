package bench

import (
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/graft-gnn/graft/internal/gemm"
	"github.com/graft-gnn/graft/internal/spmm"
	"github.com/graft-gnn/graft/internal/vec"
)

// KernelResult is one kernel measurement. Fields that do not apply to a
// kernel are left zero and omitted from JSON.
type KernelResult struct {
	Kernel        string  `json:"kernel"`
	Impl          string  `json:"impl,omitempty"`
	M             int     `json:"m,omitempty"`
	K             int     `json:"k,omitempty"`
	N             int     `json:"n,omitempty"`
	Rows          int     `json:"rows,omitempty"`
	NNZ           int64   `json:"nnz,omitempty"`
	Width         int     `json:"width,omitempty"`
	Length        int     `json:"length,omitempty"` // the triad's vectors' float32 elements
	Seconds       float64 `json:"seconds,omitempty"`
	GFLOPS        float64 `json:"gflops,omitempty"`
	GBps          float64 `json:"gbps,omitempty"`
	TriadFraction float64 `json:"triad_fraction,omitempty"`
	AllocsPerCall float64 `json:"allocs_per_call"`
}

// KernelConfig sizes the kernel benchmarks. The zero value is not useful;
// start from DefaultKernelConfig or QuickKernelConfig.
type KernelConfig struct {
	GemmRows   int   // m of every GEMM shape
	GemmWidths []int // k = n for each shape
	SpmmRows   int
	SpmmPerRow int
	SpmmWidth  int
	TriadLen   int
	Reps       int
	Seed       uint64
}

// DefaultKernelConfig is the configuration the project's targets are stated for.
func DefaultKernelConfig() KernelConfig {
	return KernelConfig{
		GemmRows: 100000, GemmWidths: []int{128, 256},
		SpmmRows: 1000000, SpmmPerRow: 15, SpmmWidth: 128,
		TriadLen: 32 << 20, Reps: 5, Seed: 1,
	}
}

// QuickKernelConfig is a small configuration for smoke tests.
func QuickKernelConfig() KernelConfig {
	return KernelConfig{
		GemmRows: 2000, GemmWidths: []int{32},
		SpmmRows: 5000, SpmmPerRow: 5, SpmmWidth: 32,
		TriadLen: 1 << 16, Reps: 2, Seed: 1,
	}
}

// Kernels runs the triad, the three GEMM forms at every width, and SpMM,
// calling emit after each measurement so long runs show progress.
func Kernels(cfg KernelConfig, emit func(KernelResult)) {
	triad := vec.TriadBandwidth(cfg.TriadLen, cfg.Reps)
	// The triad reads two vectors and writes one: 12 bytes an element.
	emit(KernelResult{Kernel: "triad", Impl: vec.Kernel(), Length: cfg.TriadLen,
		Seconds: 12 * float64(cfg.TriadLen) / (triad * 1e9), GBps: triad})

	r := rand.New(rand.NewPCG(cfg.Seed, 0))
	for _, w := range cfg.GemmWidths {
		m := cfg.GemmRows
		big1 := randSlice(r, m*w)
		big2 := randSlice(r, m*w)
		small := randSlice(r, w*w)
		out := make([]float32, m*w)
		flops := 2 * float64(m) * float64(w) * float64(w)
		forms := []struct {
			name string
			run  func()
		}{
			{"gemm_nn", func() { gemm.Gemm(false, false, m, w, w, big1, w, small, w, out, w, false) }},
			{"gemm_tn", func() { gemm.Gemm(true, false, w, w, m, big1, w, big2, w, small, w, false) }},
			{"gemm_nt", func() { gemm.Gemm(false, true, m, w, w, big1, w, small, w, out, w, false) }},
		}
		for _, f := range forms {
			sec, allocs := timeBest(cfg.Reps, f.run)
			emit(KernelResult{Kernel: f.name, Impl: gemm.Kernel(), M: m, K: w, N: w,
				Seconds: sec, GFLOPS: flops / sec / 1e9, AllocsPerCall: allocs})
		}
	}

	rows, per, width := cfg.SpmmRows, cfg.SpmmPerRow, cfg.SpmmWidth
	nnz := int64(rows) * int64(per)
	offsets := make([]int64, rows+1)
	indices := make([]int32, nnz)
	values := make([]float32, nnz)
	for i := 0; i < rows; i++ {
		offsets[i+1] = offsets[i] + int64(per)
	}
	for p := range indices {
		indices[p] = int32(r.IntN(rows))
		values[p] = r.Float32()
	}
	x := randSlice(r, rows*width)
	y := make([]float32, rows*width)
	sec, allocs := timeBest(cfg.Reps, func() {
		spmm.MulCSR(rows, offsets, indices, values, x, width, width, y, width, false)
	})
	bytes := float64(8*(rows+1)) + float64(nnz)*8 + float64(nnz)*float64(width*4) + float64(rows*width*4)
	gbps := bytes / sec / 1e9
	emit(KernelResult{Kernel: "spmm", Impl: spmm.Kernel(), Rows: rows, NNZ: nnz, Width: width,
		Seconds: sec, GBps: gbps, TriadFraction: gbps / triad, AllocsPerCall: allocs})
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// timeBest runs f once to warm up, then reps times, and returns the best
// wall time and the heap allocations per timed call.
func timeBest(reps int, f func()) (seconds, allocsPerCall float64) {
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	best := time.Duration(1<<63 - 1)
	for i := 0; i < reps; i++ {
		start := time.Now()
		f()
		if d := time.Since(start); d < best {
			best = d
		}
	}
	runtime.ReadMemStats(&after)
	return best.Seconds(), float64(after.Mallocs-before.Mallocs) / float64(reps)
}
