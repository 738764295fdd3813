package nn

import (
	"sync"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/tensor"
)

// rowOpsMin is the number of elements below which the row operations run
// on the calling goroutine.
const rowOpsMin = 1 << 16

// addRowVector adds v to every row of m (a bias), parallel over rows.
func addRowVector(m *tensor.Matrix, v []float32) {
	if len(m.Data) < rowOpsMin {
		tensor.AddRowVector(m, v)
		return
	}
	if len(v) != m.Cols {
		panic("nn: addRowVector: bias width differs from the columns")
	}
	parallel.For(m.Rows, rowGrain(m.Cols), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := m.Row(i)
			vec.Add(r, r, v)
		}
	}))
}

// sumScratch holds the per-chunk partial sums of sumRows.
type sumScratch struct {
	bounds  []int
	partial []float32
}

var sumScratches = sync.Pool{New: func() any { return new(sumScratch) }}

// sumRowsChunks is the number of row chunks sumRows cuts a large input into:
// a constant, not the core count, so that the sum rounds the same anywhere.
const sumRowsChunks = 16

// sumRows sets dst = Σ_i m[i, :]. Large inputs are cut into a fixed number
// of row chunks whose partial sums are added in chunk order, so the result
// does not depend on which worker ran which chunk, nor on how many there are.
func sumRows(dst []float32, m *tensor.Matrix) {
	clear(dst)
	chunks := min(sumRowsChunks, m.Rows/64)
	if len(m.Data) < rowOpsMin || chunks < 2 {
		tensor.SumRows(dst, m)
		return
	}
	if len(dst) != m.Cols {
		panic("nn: sumRows: output width differs from the columns")
	}
	s := sumScratches.Get().(*sumScratch)
	s.bounds = s.bounds[:0]
	for c := 0; c <= chunks; c++ {
		s.bounds = append(s.bounds, m.Rows*c/chunks)
	}
	s.partial = ensureSlice(&s.partial, chunks*m.Cols)
	clear(s.partial)
	bounds, partial, cols := s.bounds, s.partial, m.Cols
	parallel.ForBounds(bounds, rangeTask(func(lo, hi int) {
		c := lo * chunks / m.Rows
		for bounds[c] != lo {
			c++
		}
		p := partial[c*cols : (c+1)*cols]
		for i := lo; i < hi; i++ {
			vec.Add(p, p, m.Row(i))
		}
	}))
	for c := 0; c < chunks; c++ {
		vec.Add(dst, dst, partial[c*cols:(c+1)*cols])
	}
	sumScratches.Put(s)
}
