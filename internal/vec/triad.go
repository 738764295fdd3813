package vec

import (
	"time"

	"github.com/graft-gnn/graft/internal/parallel"
)

// triadTask runs the triad over a range of indices on one worker.
type triadTask struct {
	a, b, c []float32
	s       float32
}

func (t *triadTask) Run(lo, hi int) { Triad(t.a[lo:hi], t.b[lo:hi], t.c[lo:hi], t.s) }

// TriadBandwidth measures memory bandwidth the STREAM way: a[i] = b[i] + s*c[i]
// over three arrays of n float32, parallel over all cores, best of reps passes.
// It returns GB/s counting 12·n bytes per pass (STREAM convention, write
// allocation traffic not counted). Choose n at least four times the last-level
// cache, for example 32<<20.
func TriadBandwidth(n, reps int) float64 {
	if n <= 0 || reps <= 0 {
		return 0
	}
	tr := NewTriadPass(n)
	best := time.Duration(1<<63 - 1)
	for r := 0; r < reps; r++ {
		start := time.Now()
		tr.Run()
		if d := time.Since(start); d < best {
			best = d
		}
	}
	return tr.Bytes() / best.Seconds() / 1e9
}

// TriadPass is TriadBandwidth's arrays, for timing single passes in
// alternation with other kernels on a shared machine.
type TriadPass struct{ t *triadTask }

// NewTriadPass allocates and first-touches three arrays of n > 0 float32.
func NewTriadPass(n int) TriadPass {
	t := &triadTask{a: make([]float32, n), b: make([]float32, n), c: make([]float32, n), s: 3}
	parallel.For(n, triadGrain, &fillTask{t}) // first touch on the workers
	return TriadPass{t}
}

// Run makes one pass, parallel over all cores.
func (p TriadPass) Run() { parallel.For(len(p.t.a), triadGrain, p.t) }

// Bytes is what a pass moves by the STREAM convention: 12 bytes an element.
func (p TriadPass) Bytes() float64 { return 12 * float64(len(p.t.a)) }

const triadGrain = 1 << 16

type fillTask struct{ t *triadTask }

func (f *fillTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		f.t.a[i], f.t.b[i], f.t.c[i] = 0, 1, 2
	}
}
