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
	t := &triadTask{a: make([]float32, n), b: make([]float32, n), c: make([]float32, n), s: 3}
	const grain = 1 << 16
	parallel.For(n, grain, &fillTask{t}) // first touch on the workers, not timed
	best := time.Duration(1<<63 - 1)
	for r := 0; r < reps; r++ {
		start := time.Now()
		parallel.For(n, grain, t)
		if d := time.Since(start); d < best {
			best = d
		}
	}
	return 12 * float64(n) / best.Seconds() / 1e9
}

type fillTask struct{ t *triadTask }

func (f *fillTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		f.t.a[i], f.t.b[i], f.t.c[i] = 0, 1, 2
	}
}
