package minibatch

import (
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// gatherer copies the rows of a feature matrix a batch reads into storage
// of its own, reused from batch to batch.
type gatherer struct {
	dense  tensor.Matrix
	sparse tensor.CSR
}

// gather returns the rows ids of x.
func (g *gatherer) gather(x nn.Features, ids []int32) nn.Features {
	if x.Sparse != nil {
		a := x.Sparse
		out := &g.sparse
		out.Rows, out.Cols = len(ids), a.Cols
		out.Offsets = resize(out.Offsets, len(ids)+1)
		out.Offsets[0] = 0
		for i, v := range ids {
			out.Offsets[i+1] = out.Offsets[i] + a.Offsets[v+1] - a.Offsets[v]
		}
		nnz := out.Offsets[len(ids)]
		out.Indices = resize(out.Indices, int(nnz))
		if a.Values != nil {
			out.Values = resize(out.Values, int(nnz))
		} else {
			out.Values = nil
		}
		parallel.For(len(ids), 1024, sparseRows{a, out, ids})
		return nn.Features{Sparse: out}
	}
	m := x.Dense
	out := &g.dense
	out.Rows, out.Cols = len(ids), m.Cols
	out.Data = resize(out.Data, len(ids)*m.Cols)
	parallel.For(len(ids), max(1, 4096/max(1, m.Cols)), denseRows{m, out, ids})
	return nn.Features{Dense: out}
}

type denseRows struct {
	x, out *tensor.Matrix
	ids    []int32
}

func (t denseRows) Run(lo, hi int) {
	w := t.x.Cols
	for i := lo; i < hi; i++ {
		v := int(t.ids[i])
		copy(t.out.Data[i*w:(i+1)*w], t.x.Data[v*w:(v+1)*w])
	}
}

type sparseRows struct {
	x, out *tensor.CSR
	ids    []int32
}

func (t sparseRows) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		v := t.ids[i]
		src := t.x.Offsets[v]
		dst, end := t.out.Offsets[i], t.out.Offsets[i+1]
		copy(t.out.Indices[dst:end], t.x.Indices[src:])
		if t.x.Values != nil {
			copy(t.out.Values[dst:end], t.x.Values[src:])
		}
	}
}

// resize returns s with length n, reusing its storage when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
