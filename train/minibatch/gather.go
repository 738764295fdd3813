package minibatch

import (
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/cpuid"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/prefetch"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

// gatherer copies the rows of a feature matrix a batch reads into storage
// of its own, reused from batch to batch.
type gatherer struct {
	dense    tensor.Matrix
	sparse   tensor.CSR
	selected nn.Selected
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

// gatherBF16 returns the rows ids of x widened to float32: the model reads
// bf16 features as it reads float32 ones, and its arithmetic stays float32.
func (g *gatherer) gatherBF16(x *tensor.MatrixBF16, ids []int32) nn.Features {
	out := &g.dense
	out.Rows, out.Cols = len(ids), x.Cols
	out.Data = resize(out.Data, len(ids)*x.Cols)
	parallel.For(len(ids), max(1, 4096/max(1, x.Cols)), bf16Rows{x, out, ids})
	return nn.Features{Dense: out}
}

type bf16Rows struct {
	x   *tensor.MatrixBF16
	out *tensor.Matrix
	ids []int32
}

func (t bf16Rows) Run(lo, hi int) {
	w := t.x.Cols
	group := gatherGroup(2 * w)
	prefetch.Uint16Rows(t.x.Data, w, t.ids[lo:min(lo+group, hi)])
	for g := lo; g < hi; g += group {
		end := min(g+group, hi)
		prefetch.Uint16Rows(t.x.Data, w, t.ids[end:min(end+group, hi)])
		bf16.Gather(t.out.Data[g*w:end*w], w, t.x.Data, w, w, t.ids[g:end])
	}
}

// input is the feature matrix batches gather from: x, or x16, dense
// features held in bfloat16.
type input struct {
	x        nn.Features
	x16      *tensor.MatrixBF16
	willRead func(rows []int32) // train.Problem.WillRead
}

// inputOf is p's features.
func inputOf(p train.Problem) input {
	return input{x: p.Features, x16: p.FeaturesBF16, willRead: p.WillRead}
}

// gather returns the rows ids of in, in float32, in g's storage.
func (in input) gather(g *gatherer, ids []int32) nn.Features {
	if in.willRead != nil {
		in.willRead(ids)
	}
	return in.copyRows(g, ids)
}

func (in input) copyRows(g *gatherer, ids []int32) nn.Features {
	if in.x16 != nil {
		return g.gatherBF16(in.x16, ids)
	}
	return g.gather(in.x, ids)
}

// prepare returns the input features of batch b: its rows gathered, or,
// dense ones where the model reads them where they lie (reads:
// nn.Model.ReadsSelected), the rows left in place, nn.Selected, with only
// the first block's destinations' rows gathered, and those only where
// the model reads them (head: nn.Model.ReadsSelectedHead).
func (in input) prepare(g *gatherer, b *sample.Batch, reads func([]*nn.Block, nn.Features) bool, head bool) nn.Features {
	if in.x.Sparse != nil || reads == nil || len(b.Blocks) == 0 {
		return in.gather(g, b.Input)
	}
	g.selected = nn.Selected{From: in.x, IDs: b.Input}
	if in.x16 != nil {
		g.selected.From = nn.BF16Features(in.x16)
	}
	x := nn.Features{Selected: &g.selected}
	if !reads(b.Blocks, x) {
		return in.gather(g, b.Input)
	}
	if in.willRead != nil {
		in.willRead(b.Input)
	}
	if head {
		g.selected.Head = in.copyRows(g, b.Input[:b.Blocks[0].NumDst]).Dense
	}
	return x
}

// valueBytes is the size of a dense value as stored.
func (in input) valueBytes() int {
	if in.x16 != nil {
		return 2
	}
	return 4
}

func (in input) rows() int {
	if in.x16 != nil {
		return in.x16.Rows
	}
	return in.x.Rows()
}

func (in input) cols() int {
	if in.x16 != nil {
		return in.x16.Cols
	}
	return in.x.Cols()
}

type denseRows struct {
	x, out *tensor.Matrix
	ids    []int32
}

// gatherGroupBytes is the size of the groups of rows a gather prefetches
// at once, a group ahead of the one it copies. Rows prefetched one at a
// time, 8 rows ahead, left the copy waiting on AMD's cores: on an AMD EPYC
// (Zen 5), one core copying a products-sized batch's 802k rows of 100
// features, alternated with the one-row way 30 times and timed by CPU
// time under heavy load, took 0.57–0.77 of its time in groups of 30 rows
// (medians of pairs, three runs), and BenchmarkRowGather in
// internal/prefetch 0.71–1.02 (median 0.90); groups of 16 to 64 rows, one
// or two groups ahead, were within the noise of each other. Intel's cores
// stall on so many prefetches in flight: on a Xeon (family 6, model 207),
// one core, BenchmarkRowGather's groups of 30 rows took 120 ns a row
// against 87 for rows 8 ahead, and groups of 4 to 6 rows (1.6–2.4 KB) 83–93.
var gatherGroupBytes = func() int {
	if cpuid.Intel {
		return 2560
	}
	return 12 << 10
}()

// gatherGroup is the rows in a prefetch group of rows of the given bytes.
func gatherGroup(rowBytes int) int { return max(1, gatherGroupBytes/max(1, rowBytes)) }

func (t denseRows) Run(lo, hi int) {
	w := t.x.Cols
	group := gatherGroup(4 * w)
	prefetch.Float32Rows(t.x.Data, w, t.ids[lo:min(lo+group, hi)])
	for g := lo; g < hi; g += group {
		end := min(g+group, hi)
		prefetch.Float32Rows(t.x.Data, w, t.ids[end:min(end+group, hi)])
		for i := g; i < end; i++ {
			v := int(t.ids[i])
			copy(t.out.Data[i*w:(i+1)*w], t.x.Data[v*w:(v+1)*w])
		}
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
