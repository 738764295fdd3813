package bench

import (
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/gemm"
	"github.com/graft-gnn/graft/internal/hugepage"
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
	// VsFP32 is a bf16 kernel's speed over the float32 kernel's on the
	// same shape, timed interleaved with it: the ratio of their times.
	VsFP32        float64 `json:"vs_fp32,omitempty"`
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
// each in float32 and beside it in bf16 (timed interleaved, so VsFP32 is
// a same-run ratio), calling emit after each measurement so long runs
// show progress.
func Kernels(cfg KernelConfig, emit func(KernelResult)) {
	tr := vec.NewTriadPass(cfg.TriadLen)
	tt := timeInterleaved(cfg.Reps, tr.Run)
	// The triad reads two vectors and writes one: 12 bytes an element.
	triad := tr.Bytes() / tt[0].seconds / 1e9
	emit(KernelResult{Kernel: "triad", Impl: vec.Kernel(), Length: cfg.TriadLen,
		Seconds: tt[0].seconds, GBps: triad})

	r := rand.New(rand.NewPCG(cfg.Seed, 0))
	for _, w := range cfg.GemmWidths {
		m := cfg.GemmRows
		big1 := randSlice(r, m*w)
		big2 := randSlice(r, m*w)
		small := randSlice(r, w*w)
		out := make([]float32, m*w)
		h1, h2, hs := toBF16(big1), toBF16(big2), toBF16(small)
		flops := 2 * float64(m) * float64(w) * float64(w)
		forms := []struct {
			name      string
			run, bf16 func()
		}{
			{"nn", func() { gemm.Gemm(false, false, m, w, w, big1, w, small, w, out, w, false) },
				func() { gemm.GemmBF16(false, false, m, w, w, h1, w, hs, w, out, w, false) }},
			{"tn", func() { gemm.Gemm(true, false, w, w, m, big1, w, big2, w, small, w, false) },
				func() { gemm.GemmBF16(true, false, w, w, m, h1, w, h2, w, small, w, false) }},
			{"nt", func() { gemm.Gemm(false, true, m, w, w, big1, w, small, w, out, w, false) },
				func() { gemm.GemmBF16(false, true, m, w, w, h1, w, hs, w, out, w, false) }},
		}
		for _, f := range forms {
			t := timeInterleaved(cfg.Reps, f.run, f.bf16)
			emit(KernelResult{Kernel: "gemm_" + f.name, Impl: gemm.Kernel(), M: m, K: w, N: w,
				Seconds: t[0].seconds, GFLOPS: flops / t[0].seconds / 1e9, AllocsPerCall: t[0].allocs})
			emit(KernelResult{Kernel: "gemm_bf16_" + f.name, Impl: gemm.KernelBF16(), M: m, K: w, N: w,
				Seconds: t[1].seconds, GFLOPS: flops / t[1].seconds / 1e9, AllocsPerCall: t[1].allocs,
				VsFP32: t[0].seconds / t[1].seconds})
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
	xb := toBF16(x)
	y := hugepage.Float32s(rows * width) // as training allocates its kept buffers
	// The triad runs again in alternation with the SpMMs, which are
	// measured against the best of all its passes: on a shared machine a
	// lull in the load would otherwise favour one side.
	t := timeInterleaved(cfg.Reps,
		func() { spmm.MulCSR(rows, offsets, indices, values, x, width, width, y, width, false) },
		func() { spmm.MulCSRBF16(rows, offsets, indices, values, xb, width, width, y, width, false) },
		tr.Run)
	triad = max(triad, tr.Bytes()/t[2].seconds/1e9)
	// Bytes: the CSR arrays, every gathered row and the output once.
	bytes := func(elem int) float64 {
		return float64(8*(rows+1)) + float64(nnz)*8 + float64(nnz)*float64(width*elem) + float64(rows*width*4)
	}
	gbps := bytes(4) / t[0].seconds / 1e9
	emit(KernelResult{Kernel: "spmm", Impl: spmm.Kernel(), Rows: rows, NNZ: nnz, Width: width,
		Seconds: t[0].seconds, GBps: gbps, TriadFraction: gbps / triad, AllocsPerCall: t[0].allocs})
	gbps = bytes(2) / t[1].seconds / 1e9
	emit(KernelResult{Kernel: "spmm_bf16", Impl: spmm.Kernel(), Rows: rows, NNZ: nnz, Width: width,
		Seconds: t[1].seconds, GBps: gbps, TriadFraction: gbps / triad, AllocsPerCall: t[1].allocs,
		VsFP32: t[0].seconds / t[1].seconds})
}

func toBF16(x []float32) []uint16 {
	h := hugepage.Uint16s(len(x))
	bf16.Encode(h, x)
	return h
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := hugepage.Float32s(n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

type timing struct{ seconds, allocs float64 }

// timeInterleaved times the kernels fs as timeBest does, alternating them
// rep by rep, so that a shared machine's changing load falls on all alike
// and the ratios of their times are fair.
func timeInterleaved(reps int, fs ...func()) []timing {
	out := make([]timing, len(fs))
	for i, f := range fs {
		f()
		out[i].seconds = math.Inf(1)
	}
	for range reps {
		for i, f := range fs {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			f()
			d := time.Since(start).Seconds()
			runtime.ReadMemStats(&after)
			out[i].seconds = min(out[i].seconds, d)
			out[i].allocs += float64(after.Mallocs-before.Mallocs) / float64(reps)
		}
	}
	return out
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
