package nn

import (
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// Halo extends per-node quantities from the rows a worker owns to the halo
// rows it reads from other workers, and returns their gradients. It is nil in
// a single process. The layer argument is the index of the calling layer in
// the model, so an implementation can keep per-layer buffers and tags.
type Halo interface {
	// Forward writes into ext (Rows = number of sources) the owned rows h
	// followed by the halo rows received from peers. h may be the first
	// rows of ext itself, as the layers compute it.
	Forward(layer int, h, ext *tensor.Matrix)
	// Backward takes the gradient of ext, sends the halo part to the owners,
	// and writes into dh (owned rows) the owned part plus the gradients
	// received from peers. dh may be the first rows of dext itself, as the
	// layers pass it. When fill is not nil, dext's halo rows are not
	// written: fill(lo, hi, out) writes the gradient of halo rows [lo, hi)
	// (0 is the first row after the owned ones) into out, of hi−lo rows,
	// and Backward calls it for every halo row once, a piece at a time as
	// it sends them or all at once into dext, so that a layer need not
	// write them all out (they are most of the rows on a fine partition)
	// for the exchange to read back.
	Backward(layer int, dext, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix))
}

// Graph is what a layer aggregates over: the adjacency of this process's
// target rows over its source rows (targets first, then halo rows), the
// normalised operators derived from it, the global ids of the sources, and
// the halo exchange.
//
// Operators are built on first use and cached, so a Graph must not be used by
// two models concurrently.
type Graph struct {
	NumTargets int // rows this process computes
	NumSources int // rows it reads: the targets, then the halo rows

	// GlobalIDs[i] is the global node id of source i (so of target i for
	// i < NumTargets). Nil means the identity, as in a single process.
	GlobalIDs []int32

	// Halo is nil when there are no halo rows.
	Halo Halo

	whole *graph.Graph // single-process case: operators are built lazily from it

	loops *tensor.CSR // pattern of A+I (values ignored): GAT's edges
	gcn   *tensor.CSR // D^-1/2 (A+I) D^-1/2 with global degrees
	mean  *tensor.CSR // mean over in-neighbours, no self loops

	gcnT, meanT *tensor.CSR // transposes, built on the first backward pass
	symmetric   int8        // whole is symmetric: 0 unknown, 1 yes, -1 no
	loopsT      *tensor.CSR // transposed pattern of loops
	loopsPerm   []int64     // loopsPerm[q] = position in loops of entry q of loopsT
}

// NewGraph returns the single-process Graph of g: every node is a target and
// a source, there is no halo, and the operators are computed from g when a
// layer first needs them. Row v of g lists the nodes v aggregates from.
func NewGraph(g *graph.Graph) *Graph {
	return &Graph{NumTargets: g.N, NumSources: g.N, whole: g}
}

// LocalOperators are the operators of a partition, all with one row per
// target and one column per source (targets first, then halo rows). Only
// those the model's layers use need to be set.
type LocalOperators struct {
	// Loops is the adjacency with a self loop in every target row (entry
	// (i, i)); GAT attends over its entries, in the order each row lists
	// them (so a partition that keeps the global order sums as the whole
	// graph does). Values are ignored. When nil, GCN's pattern is used.
	Loops *tensor.CSR
	// GCN is D^-1/2 (A+I) D^-1/2 computed with global degrees.
	GCN *tensor.CSR
	// Mean has 1/deg(i) at every in-neighbour of target i (no self loop),
	// for GraphSAGE.
	Mean *tensor.CSR
}

// NewLocalGraph returns the Graph of one partition. globalIDs has one entry
// per source; it keys dropout so that it does not depend on partitioning.
func NewLocalGraph(ops LocalOperators, globalIDs []int32, halo Halo) (*Graph, error) {
	if ops.Loops == nil {
		ops.Loops = ops.GCN
	}
	g := &Graph{NumTargets: -1, GlobalIDs: globalIDs, Halo: halo, loops: ops.Loops, gcn: ops.GCN, mean: ops.Mean}
	for _, op := range []struct {
		name string
		a    *tensor.CSR
	}{{"Loops", ops.Loops}, {"GCN", ops.GCN}, {"Mean", ops.Mean}} {
		if op.a == nil {
			continue
		}
		if err := op.a.Validate(); err != nil {
			return nil, fmt.Errorf("nn: local operator %s: %w", op.name, err)
		}
		if g.NumTargets < 0 {
			g.NumTargets, g.NumSources = op.a.Rows, op.a.Cols
		} else if op.a.Rows != g.NumTargets || op.a.Cols != g.NumSources {
			return nil, fmt.Errorf("nn: local operator %s is %d×%d, others are %d×%d",
				op.name, op.a.Rows, op.a.Cols, g.NumTargets, g.NumSources)
		}
	}
	if g.NumTargets < 0 {
		return nil, fmt.Errorf("nn: no local operator given")
	}
	if g.NumSources < g.NumTargets {
		return nil, fmt.Errorf("nn: %d sources cannot hold the %d targets first", g.NumSources, g.NumTargets)
	}
	if globalIDs != nil && len(globalIDs) != g.NumSources {
		return nil, fmt.Errorf("nn: %d global ids for %d sources", len(globalIDs), g.NumSources)
	}
	if globalIDs == nil && g.NumSources != g.NumTargets {
		return nil, fmt.Errorf("nn: a graph with halo rows needs the global ids of its sources")
	}
	if halo == nil && g.NumSources != g.NumTargets {
		return nil, fmt.Errorf("nn: %d halo rows but no Halo exchange", g.NumSources-g.NumTargets)
	}
	if l := ops.Loops; l != nil {
		for r := 0; r < l.Rows; r++ {
			if !slices.Contains(l.Indices[l.Offsets[r]:l.Offsets[r+1]], int32(r)) {
				return nil, fmt.Errorf("nn: row %d of the self-loop adjacency lacks its self loop", r)
			}
		}
	}
	return g, nil
}

// globalID returns the global id of source i.
func (g *Graph) globalID(i int) uint64 {
	if g.GlobalIDs == nil {
		return uint64(i)
	}
	return uint64(g.GlobalIDs[i])
}

func (g *Graph) loopsOp() *tensor.CSR {
	if g.loops == nil && g.whole != nil {
		g.loops = g.whole.WithSelfLoops().Matrix(nil)
	}
	if g.loops == nil {
		panic("nn: this Graph has no self-loop adjacency (LocalOperators.Loops or GCN)")
	}
	return g.loops
}

func (g *Graph) gcnOp() *tensor.CSR {
	if g.gcn == nil && g.whole != nil {
		l := g.loopsOp()
		deg := make([]int32, l.Rows)
		for i := range deg {
			deg[i] = int32(l.Offsets[i+1] - l.Offsets[i])
		}
		a, err := graph.GCNNormWithDegrees(l, deg, deg)
		if err != nil {
			panic("nn: " + err.Error()) // unreachable: every row has its self loop
		}
		g.gcn = a
	}
	if g.gcn == nil {
		panic("nn: this Graph has no GCN operator (LocalOperators.GCN)")
	}
	return g.gcn
}

// wholeSymmetric reports whether this is a single-process Graph over a
// symmetric graph, whose GCN operator is then its own transpose.
func (g *Graph) wholeSymmetric() bool {
	if g.whole == nil {
		return false
	}
	if g.symmetric == 0 {
		g.symmetric = -1
		if symmetricByHash(g.whole) {
			g.symmetric = 1
		}
	}
	return g.symmetric > 0
}

// symmetricByHash reports whether the edge multiset of g equals that of its
// transpose by comparing, under two independent keys, the sums over edges of
// a 64-bit hash of (u, v) and of (v, u). A sequential pass in parallel over
// rows: graph.IsSymmetric's binary searches cost seconds on 15M edges. A
// non-symmetric graph passes with probability about 2⁻¹²⁸.
func symmetricByHash(gr *graph.Graph) bool {
	const chunks = 64
	var sums [chunks][4]uint64
	k1, k2 := mix64(0x73796d6d), mix64(0x65747279)
	parallel.For(chunks, 1, rangeTask(func(lo, hi int) {
		for c := lo; c < hi; c++ {
			var s [4]uint64
			for v := gr.N * c / chunks; v < gr.N*(c+1)/chunks; v++ {
				for _, u := range gr.Adj(v) {
					fwd, rev := uint64(v)<<32|uint64(u), uint64(u)<<32|uint64(v)
					s[0] += mix64(k1 ^ fwd)
					s[1] += mix64(k1 ^ rev)
					s[2] += mix64(k2 ^ fwd)
					s[3] += mix64(k2 ^ rev)
				}
			}
			sums[c] = s
		}
	}))
	var t [4]uint64
	for _, s := range sums {
		for i := range t {
			t[i] += s[i]
		}
	}
	return t[0] == t[1] && t[2] == t[3]
}

func (g *Graph) gcnTOp() *tensor.CSR {
	if g.gcnT == nil {
		a := g.gcnOp()
		if g.gcn == a && g.wholeSymmetric() {
			// Entry (v, u) is 1/sqrt(d_v·d_u) over a symmetric pattern with
			// d the row lengths: the operator equals its transpose bit for
			// bit, so the backward product reuses it.
			g.gcnT = a
		} else {
			g.gcnT = a.Transpose()
		}
	}
	return g.gcnT
}

func (g *Graph) meanOp() *tensor.CSR {
	if g.mean == nil && g.whole != nil {
		g.mean = g.whole.MeanNorm()
	}
	if g.mean == nil {
		panic("nn: this Graph has no mean operator (LocalOperators.Mean)")
	}
	return g.mean
}

func (g *Graph) meanTOp() *tensor.CSR {
	if g.meanT == nil {
		a := g.meanOp()
		if g.wholeSymmetric() {
			// The transpose of D⁻¹A for symmetric A has A's pattern with
			// 1/deg(u) at entry (v, u): share the pattern, make the values.
			t := &tensor.CSR{Rows: a.Cols, Cols: a.Rows, Offsets: a.Offsets, Indices: a.Indices, Values: make([]float32, a.NNZ())}
			inv := make([]float32, a.Rows) // row u's value 1/deg(u)
			for u := range inv {
				if a.Offsets[u] < a.Offsets[u+1] {
					inv[u] = a.Value(a.Offsets[u])
				}
			}
			parallel.For(a.Rows, 4096, rangeTask(func(lo, hi int) {
				for v := lo; v < hi; v++ {
					for p := a.Offsets[v]; p < a.Offsets[v+1]; p++ {
						t.Values[p] = inv[a.Indices[p]]
					}
				}
			}))
			g.meanT = t
		} else {
			g.meanT = a.Transpose()
		}
	}
	return g.meanT
}

// loopsTranspose returns the transposed self-loop pattern and, for each of
// its entries, the position of the same edge in the untransposed pattern, so
// GAT can gather per-edge values by source without scattering.
func (g *Graph) loopsTranspose() (*tensor.CSR, []int64) {
	if g.loopsT == nil {
		l := g.loopsOp()
		t := &tensor.CSR{Rows: l.Cols, Cols: l.Rows, Offsets: make([]int64, l.Cols+1), Indices: make([]int32, l.NNZ())}
		perm := make([]int64, l.NNZ())
		for _, c := range l.Indices[:l.NNZ()] {
			t.Offsets[c+1]++
		}
		for i := 0; i < l.Cols; i++ {
			t.Offsets[i+1] += t.Offsets[i]
		}
		next := slices.Clone(t.Offsets[:l.Cols])
		for r := 0; r < l.Rows; r++ {
			for p := l.Offsets[r]; p < l.Offsets[r+1]; p++ {
				c := l.Indices[p]
				q := next[c]
				next[c]++
				t.Indices[q] = int32(r)
				perm[q] = p
			}
		}
		g.loopsT, g.loopsPerm = t, perm
	}
	return g.loopsT, g.loopsPerm
}

// ownRows returns the matrix in which a layer computes its targets' rows,
// cols wide: with a Halo the first rows of *ext, which extend then fills
// with the halo rows in place (no copy of the targets' rows), through the
// header head; without one *h.
func (g *Graph) ownRows(h, ext **tensor.Matrix, head *tensor.Matrix, cols int) *tensor.Matrix {
	if g.Halo == nil {
		return ensure(h, g.NumTargets, cols)
	}
	e := ensure(ext, g.NumSources, cols)
	*head = tensor.Matrix{Rows: g.NumTargets, Cols: cols, Data: e.Data[:g.NumTargets*cols]}
	return head
}

// extend returns h extended to all sources through the halo exchange of
// layer; without a Halo it is h itself.
func (g *Graph) extend(layer int, h *tensor.Matrix, buf **tensor.Matrix) *tensor.Matrix {
	if g.Halo == nil {
		return h
	}
	ext := ensure(buf, g.NumSources, h.Cols)
	g.Halo.Forward(layer, h, ext)
	return ext
}

// aggregateBackward returns the owned rows' gradient of an aggregation by
// op (targets × sources) given its output's gradient dy: opT·dy (opT is
// op's transpose) with the halo rows' part returned to their owners and
// the peers' added, in place in dext's first rows (through the header
// head). The halo rows are multiplied out as the exchange asks for them.
func (g *Graph) aggregateBackward(layer int, opT *tensor.CSR, dy, dext, head *tensor.Matrix) *tensor.Matrix {
	if g.Halo == nil {
		tensor.SpMM(dext, opT, dy)
		return dext
	}
	own := g.NumTargets
	*head = tensor.Matrix{Rows: own, Cols: dext.Cols, Data: dext.Data[:own*dext.Cols]}
	tensor.SpMMRows(head, opT, 0, own, dy)
	g.Halo.Backward(layer, dext, head, func(lo, hi int, out *tensor.Matrix) {
		tensor.SpMMRows(out, opT, own+lo, own+hi, dy)
	})
	return head
}

// reduce maps the gradient of an extended quantity back to the owned rows,
// in place: they are dext's first rows, returned through the header head,
// and the halo exchange adds to them what the peers return. Without a Halo
// it is dext itself.
func (g *Graph) reduce(layer int, dext, head *tensor.Matrix) *tensor.Matrix {
	if g.Halo == nil {
		return dext
	}
	*head = tensor.Matrix{Rows: g.NumTargets, Cols: dext.Cols, Data: dext.Data[:g.NumTargets*dext.Cols]}
	g.Halo.Backward(layer, dext, head, nil)
	return head
}
