package nn

import (
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/dropmask"
	"github.com/graft-gnn/graft/internal/memacct"
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
	// ForwardBF16 is Forward for a quantity held in bfloat16 (Model.SetBF16):
	// ext's first own rows are the owned rows, already written, and it
	// writes the halo rows after them.
	ForwardBF16(layer int, ext *tensor.MatrixBF16, own int)
	// Backward takes the gradient of ext, sends the halo part to the owners,
	// and writes into dh (owned rows) the owned part plus the gradients
	// received from peers. dh may be the first rows of dext itself, as the
	// layers pass it. When fill is not nil, dext's halo rows are not
	// written: fill(lo, hi, out) writes the gradient of halo rows [lo, hi)
	// (0 is the first row after the owned ones) into out, of hi−lo rows,
	// and Backward calls it for every halo row once, a piece at a time as
	// it sends them or all at once into dext, so that a layer need not
	// write them all out (they are most of the rows on a fine partition)
	// for the exchange to read back. It may call fill from other
	// goroutines, concurrently, before it returns (GradientPuller): fill
	// must only read what does not change during Backward.
	Backward(layer int, dext, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix))
}

// SharedHalo is a Halo whose parts share memory (one process). For a pass
// it can share, a layer computes its owned rows of the per-node quantity
// straight into a buffer that holds every part's rows (Shared, or
// SharedBF16), waits until every part has written them (Written) and
// aggregates over the buffer with its operator's columns renumbered to
// rows of it (SourceRows): no halo row is copied, and the sums are the
// exchange's. Where the Halo also pulls gradients (GradientPuller), the
// backward pass takes its gradient of the owned rows from Shared's own
// rows. Shared returns nil for a pass it does not share, and once every
// part is done with the buffer's previous use; every part calls it at the
// same points.
type SharedHalo interface {
	Shared(layer, cols int) (all, own *tensor.Matrix)
	SharedBF16(layer, cols int) (all, own *tensor.MatrixBF16)
	Written(layer int)
	SourceRows() []int32
}

// GradientPuller is a Halo whose Backward, given a fill function, may
// never need dext's halo rows: when PullsGradients(layer) is true in a
// pass, fill makes every halo row's gradient that leaves (the peers of an
// in-process group call it as they read them), and a layer passes dext
// with the owned rows alone.
type GradientPuller interface {
	PullsGradients(layer int) bool
}

// Block is what a layer aggregates over: a bipartite graph from source
// rows to destination rows, the destinations first among the sources (the
// message-flow-graph convention of DGL), with the operators that aggregate
// over it, the global ids of the sources, and the halo exchange.
//
// One type serves three cases:
//   - the whole graph in one process (WholeGraph): every node is a
//     destination and a source;
//   - a partition's local graph: the owned rows are the destinations, the
//     sources are the owned rows then the halo rows, and the Halo fills
//     the halo rows of every per-node quantity from the peers that own
//     them, so a layer's input has one row per destination;
//   - a sampled block of a mini-batch: the destinations are the nodes this
//     layer computes, the sources those they read, and a layer's input has
//     one row per source. Samplers put their normalisation (FastGCN and
//     LADIES importance weights, GraphSAINT's aggregator normalisation) in
//     the operators' values, so no layer needs to know which sampler ran.
//
// Operators are built on first use and cached, so a Block must not be used
// by two models concurrently.
type Block struct {
	NumDst int // rows a layer computes
	NumSrc int // rows it reads: the destinations, then the others

	// SrcIDs[i] is the global node id of source i (so of destination i
	// for i < NumDst); it keys dropout, so that dropout does not depend on
	// how the graph was split or sampled. Nil means the identity, as in a
	// single process.
	SrcIDs []int32

	// Halo, when not nil, extends per-node quantities from the
	// destinations to the other sources; a block without one reads its
	// input at every source.
	Halo Halo

	whole *graph.Graph // whole-graph case: operators are built lazily from it

	loops *tensor.CSR // pattern of A+I (values ignored): GAT's edges
	gcn   *tensor.CSR // D^-1/2 (A+I) D^-1/2 with global degrees
	mean  *tensor.CSR // mean over in-neighbours, no self loops

	gcnT, meanT *tensor.CSR // transposes, built on the first backward pass
	symmetric   int8        // whole is symmetric: 0 unknown, 1 yes, -1 no
	loopsT      *tensor.CSR // transposed pattern of loops
	loopsPerm   []int64     // loopsPerm[q] = position in loops of entry q of loopsT

	// Storage of the transposes, of the operator renumbered to Selected
	// rows and of their keep bits, kept across Reset.
	gcnTBuf, meanTBuf, loopsTBuf, selected tensor.CSR
	selectedBits                           []uint64 // the sources' keep bits (selectedMask)

	renumbered []renumbered // operators renumbered for a SharedHalo

	opBytes int64 // operators built for the block, in the memory account until Release
}

// WholeGraph returns the single-process block of g: every node is a
// destination and a source, there is no halo, and the operators are
// computed from g when a layer first needs them. Row v of g lists the nodes
// v aggregates from.
func WholeGraph(g *graph.Graph) *Block {
	return &Block{NumDst: g.N, NumSrc: g.N, whole: g}
}

// Operators are a block's aggregation operators, each with one row per
// destination and one column per source. Only those the model's layers use
// need to be set.
type Operators struct {
	// Loops is the adjacency with a self loop in every destination row
	// (entry (i, i)); GAT attends over its entries, in the order each row
	// lists them (so a partition that keeps the global order sums as the
	// whole graph does). Values are ignored. When nil, GCN's pattern is
	// used.
	Loops *tensor.CSR
	// GCN is D^-1/2 (A+I) D^-1/2 computed with the global degrees; a
	// sampler's weights multiply its entries.
	GCN *tensor.CSR
	// Mean has 1/deg(i) at every in-neighbour of destination i (no self
	// loop), for GraphSAGE; a sampler's normalisation replaces it.
	Mean *tensor.CSR
}

// NewBlock returns a block with the given operators. srcIDs has one entry
// per source (nil: the identity, for a block whose sources are the
// destinations); halo is nil unless the other sources' rows come from
// peers.
func NewBlock(ops Operators, srcIDs []int32, halo Halo) (*Block, error) {
	g := &Block{}
	if err := g.init(ops, srcIDs, halo); err != nil {
		return nil, err
	}
	return g, nil
}

// Reset makes g the block of ops and srcIDs, without a halo, as NewBlock
// does, keeping the storage of its transposed operators: a sampler that
// makes a block per layer for every mini-batch reuses blocks through it,
// and their backward passes allocate nothing once grown.
func (g *Block) Reset(ops Operators, srcIDs []int32) error {
	return g.init(ops, srcIDs, nil)
}

func (g *Block) init(ops Operators, srcIDs []int32, halo Halo) error {
	if ops.Loops == nil {
		ops.Loops = ops.GCN
	}
	for _, r := range g.renumbered { // copies of the old operators, let go
		g.count(-4 * int64(cap(r.op.Indices)))
	}
	*g = Block{NumDst: -1, SrcIDs: srcIDs, Halo: halo, loops: ops.Loops, gcn: ops.GCN, mean: ops.Mean,
		gcnTBuf: g.gcnTBuf, meanTBuf: g.meanTBuf, loopsTBuf: g.loopsTBuf, selected: g.selected, selectedBits: g.selectedBits, loopsPerm: g.loopsPerm[:0], opBytes: g.opBytes}
	for _, op := range []struct {
		name string
		a    *tensor.CSR
	}{{"Loops", ops.Loops}, {"GCN", ops.GCN}, {"Mean", ops.Mean}} {
		if op.a == nil {
			continue
		}
		if err := op.a.Validate(); err != nil {
			return fmt.Errorf("nn: operator %s: %w", op.name, err)
		}
		if g.NumDst < 0 {
			g.NumDst, g.NumSrc = op.a.Rows, op.a.Cols
		} else if op.a.Rows != g.NumDst || op.a.Cols != g.NumSrc {
			return fmt.Errorf("nn: operator %s is %d×%d, others are %d×%d",
				op.name, op.a.Rows, op.a.Cols, g.NumDst, g.NumSrc)
		}
	}
	if g.NumDst < 0 {
		return fmt.Errorf("nn: no operator given")
	}
	if g.NumSrc < g.NumDst {
		return fmt.Errorf("nn: %d sources cannot hold the %d destinations first", g.NumSrc, g.NumDst)
	}
	if srcIDs != nil && len(srcIDs) != g.NumSrc {
		return fmt.Errorf("nn: %d source ids for %d sources", len(srcIDs), g.NumSrc)
	}
	if srcIDs == nil && g.NumSrc != g.NumDst {
		return fmt.Errorf("nn: a block with more sources than destinations needs the sources' global ids")
	}
	if l := ops.Loops; l != nil {
		for r := 0; r < l.Rows; r++ {
			if !slices.Contains(l.Indices[l.Offsets[r]:l.Offsets[r+1]], int32(r)) {
				return fmt.Errorf("nn: row %d of the self-loop adjacency lacks its self loop", r)
			}
		}
	}
	return nil
}

// count records n more bytes (fewer when negative) of operators built for
// the block in the memory account (memacct.Operators).
func (g *Block) count(n int64) {
	g.opBytes += n
	memacct.Add(memacct.Operators, n)
}

// capBytes is the bytes a CSR's arrays hold.
func capBytes(a *tensor.CSR) int64 {
	return 8*int64(cap(a.Offsets)) + 4*int64(cap(a.Indices)+cap(a.Values))
}

// HoldOperators counts in the memory account n bytes of the operators the
// block was made with that were built for it alone (a part's local
// operators, beside the part's adjacency), so that Release lets them go
// with the transposes the block builds itself.
func (g *Block) HoldOperators(n int64) { g.count(n) }

// Release takes every operator counted for the block out of the memory
// account: its owner is done with it.
func (g *Block) Release() { g.count(-g.opBytes) }

// Operators returns the operators the block was made with (none for a
// WholeGraph block, which builds its own when a layer first needs them).
func (g *Block) Operators() Operators {
	if g.whole != nil {
		return Operators{}
	}
	return Operators{Loops: g.loops, GCN: g.gcn, Mean: g.mean}
}

// InputRows is the number of rows a layer's input has on this block: one
// per destination when the Halo brings the other sources' rows, one per
// source otherwise.
func (g *Block) InputRows() int {
	if g.Halo != nil {
		return g.NumDst
	}
	return g.NumSrc
}

// globalID returns the global id of source i.
func (g *Block) globalID(i int) uint64 {
	if g.SrcIDs == nil {
		return uint64(i)
	}
	return uint64(g.SrcIDs[i])
}

func (g *Block) loopsOp() *tensor.CSR {
	if g.loops == nil && g.whole != nil {
		g.loops = g.whole.WithSelfLoops().Matrix(nil)
		g.count(capBytes(g.loops))
	}
	if g.loops == nil {
		panic("nn: this Graph has no self-loop adjacency (Operators.Loops or GCN)")
	}
	return g.loops
}

func (g *Block) gcnOp() *tensor.CSR {
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
		g.count(4 * int64(cap(a.Values))) // the self-loop pattern's values
	}
	if g.gcn == nil {
		panic("nn: this Graph has no GCN operator (Operators.GCN)")
	}
	return g.gcn
}

// wholeSymmetric reports whether this is a single-process Graph over a
// symmetric graph, whose GCN operator is then its own transpose.
func (g *Block) wholeSymmetric() bool {
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
	k1, k2 := dropmask.Mix64(0x73796d6d), dropmask.Mix64(0x65747279)
	parallel.For(chunks, 1, rangeTask(func(lo, hi int) {
		for c := lo; c < hi; c++ {
			var s [4]uint64
			for v := gr.N * c / chunks; v < gr.N*(c+1)/chunks; v++ {
				for _, u := range gr.Adj(v) {
					fwd, rev := uint64(v)<<32|uint64(u), uint64(u)<<32|uint64(v)
					s[0] += dropmask.Mix64(k1 ^ fwd)
					s[1] += dropmask.Mix64(k1 ^ rev)
					s[2] += dropmask.Mix64(k2 ^ fwd)
					s[3] += dropmask.Mix64(k2 ^ rev)
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

func (g *Block) gcnTOp() *tensor.CSR {
	if g.gcnT == nil {
		a := g.gcnOp()
		if g.gcn == a && g.wholeSymmetric() {
			// Entry (v, u) is 1/sqrt(d_v·d_u) over a symmetric pattern with
			// d the row lengths: the operator equals its transpose bit for
			// bit, so the backward product reuses it.
			g.gcnT = a
		} else {
			g.gcnT = g.transposeInto(a, &g.gcnTBuf)
		}
	}
	return g.gcnT
}

func (g *Block) meanOp() *tensor.CSR {
	if g.mean == nil && g.whole != nil {
		g.mean = g.whole.MeanNorm()
		g.count(4 * int64(cap(g.mean.Values))) // the graph's own pattern
	}
	if g.mean == nil {
		panic("nn: this Graph has no mean operator (Operators.Mean)")
	}
	return g.mean
}

func (g *Block) meanTOp() *tensor.CSR {
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
			g.count(4 * int64(cap(t.Values)))
		} else {
			g.meanT = g.transposeInto(a, &g.meanTBuf)
		}
	}
	return g.meanT
}

// transposeInto transposes a into buf, storage the block keeps across
// Reset, counting what buf grows by, and returns buf.
func (g *Block) transposeInto(a, buf *tensor.CSR) *tensor.CSR {
	was := capBytes(buf)
	a.TransposeInto(buf)
	g.count(capBytes(buf) - was)
	return buf
}

// resized is s with length n, its storage reused when large enough, else
// allocated to n exactly.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// loopsTranspose returns the transposed self-loop pattern and, for each of
// its entries, the position of the same edge in the untransposed pattern, so
// GAT can gather per-edge values by source without scattering.
func (g *Block) loopsTranspose() (*tensor.CSR, []int64) {
	if g.loopsT == nil {
		l := g.loopsOp()
		t := &g.loopsTBuf
		was := capBytes(t) + 8*int64(cap(g.loopsPerm))
		t.Rows, t.Cols = l.Cols, l.Rows
		t.Offsets = resized(t.Offsets, l.Cols+1)
		clear(t.Offsets)
		t.Indices = resized(t.Indices, l.NNZ())
		t.Values = nil
		perm := resized(g.loopsPerm, l.NNZ())
		for _, c := range l.Indices[:l.NNZ()] {
			t.Offsets[c+1]++
		}
		for i := 0; i < l.Cols; i++ {
			t.Offsets[i+1] += t.Offsets[i]
		}
		for r := 0; r < l.Rows; r++ { // t.Offsets[c] counts up to c's next free slot
			for p := l.Offsets[r]; p < l.Offsets[r+1]; p++ {
				c := l.Indices[p]
				q := t.Offsets[c]
				t.Offsets[c]++
				t.Indices[q] = int32(r)
				perm[q] = p
			}
		}
		for i := l.Cols; i > 0; i-- {
			t.Offsets[i] = t.Offsets[i-1]
		}
		t.Offsets[0] = 0
		g.loopsT, g.loopsPerm = t, perm
		g.count(capBytes(t) + 8*int64(cap(perm)) - was)
	}
	return g.loopsT, g.loopsPerm
}

// ownRows returns the matrix in which a layer computes the per-node
// quantity of its input rows, cols wide: with a Halo the first rows of
// *ext, which extend then fills with the halo rows in place (no copy of the
// destinations' rows), through the header head; without one *h, a row per
// source.
func (g *Block) ownRows(h, ext **tensor.Matrix, head *tensor.Matrix, cols int) *tensor.Matrix {
	if g.Halo == nil {
		return ensure(h, g.NumSrc, cols)
	}
	e := ensure(ext, g.NumSrc, cols)
	*head = tensor.Matrix{Rows: g.NumDst, Cols: cols, Data: e.Data[:g.NumDst*cols]}
	return head
}

// extend returns h extended to all sources through the halo exchange of
// layer; without a Halo it is h itself, already a row per source.
func (g *Block) extend(layer int, h *tensor.Matrix, buf **tensor.Matrix) *tensor.Matrix {
	if g.Halo == nil {
		return h
	}
	ext := ensure(buf, g.NumSrc, h.Cols)
	g.Halo.Forward(layer, h, ext)
	return ext
}

// shared returns the Halo as a SharedHalo, or nil.
func (g *Block) shared() SharedHalo {
	sh, _ := g.Halo.(SharedHalo)
	return sh
}

// projectShared computes x·w, at p, into this part's rows of the shared buffer
// of layer's pass and returns the buffer, every part's rows written, and
// op with its columns renumbered to rows of it; nil when the pass is not
// shared.
func (g *Block) projectShared(p tensor.Products, layer int, x Features, w *tensor.Matrix, op *tensor.CSR) (*tensor.Matrix, *tensor.CSR) {
	sh := g.shared()
	if sh == nil {
		return nil, nil
	}
	all, own := sh.Shared(layer, w.Cols)
	if all == nil {
		return nil, nil
	}
	x.mul(p, own, w)
	sh.Written(layer)
	return all, g.sharedOp(op, sh.SourceRows(), all.Rows)
}

// selectedOp returns op with its columns renumbered through ids (source
// i is row ids[i]) to rows of a matrix of rows rows, for Selected input
// rows: the same entries in the same order, in storage the block keeps
// across Reset.
func (g *Block) selectedOp(op *tensor.CSR, ids []int32, rows int) *tensor.CSR {
	t := &g.selected
	if n, was := op.NNZ(), cap(t.Indices); was < n { // batches differ in size: grow with room to spare
		t.Indices = make([]int32, n, growTo(was, n))
		g.count(4 * int64(cap(t.Indices)-was))
	}
	t.Indices = t.Indices[:op.NNZ()]
	t.Rows, t.Cols, t.Offsets, t.Values = op.Rows, rows, op.Offsets, op.Values
	parallel.For(op.Rows, 4096, rangeTask(func(lo, hi int) {
		for p := op.Offsets[lo]; p < op.Offsets[hi]; p++ {
			t.Indices[p] = ids[op.Indices[p]]
		}
	}))
	return t
}

// selectedMask returns the mask that drops op's sources (its columns) as
// spec drops them, for a product over op renumbered to Selected rows
// (selectedOp): the keep bits of every source, keyed by its global id, in
// storage the block keeps across Reset. A bit per element, they are a
// thirty-second of the bytes of the dropped copy they stand in for.
func (g *Block) selectedMask(op *tensor.CSR, spec *dropSpec, cols int) tensor.RowMask {
	w := dropmask.Words(cols)
	if n, was := g.NumSrc*w, cap(g.selectedBits); was < n {
		g.selectedBits = make([]uint64, n, growTo(was, n))
		g.count(8 * int64(cap(g.selectedBits)-was))
	}
	bits := g.selectedBits[:g.NumSrc*w]
	parallel.For(g.NumSrc, rowGrain(cols), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dropmask.KeepBits(bits[i*w:(i+1)*w], cols, spec.key, g.globalID(i), spec.thr)
		}
	}))
	return tensor.RowMask{Bits: bits, Stride: w, Rows: op.Indices, Scale: spec.scale}
}

// renumbered is an operator with its columns renumbered to rows of a
// SharedHalo's buffer.
type renumbered struct{ of, op *tensor.CSR }

// sharedOp returns op with its columns renumbered to rows (of total) of
// the shared buffer, made once per operator: a copy of its column
// indices.
func (g *Block) sharedOp(op *tensor.CSR, rows []int32, total int) *tensor.CSR {
	for _, s := range g.renumbered {
		if s.of == op {
			return s.op
		}
	}
	r := &tensor.CSR{Rows: op.Rows, Cols: total, Offsets: op.Offsets, Values: op.Values, Indices: make([]int32, op.NNZ())}
	parallel.For(op.Rows, 4096, rangeTask(func(lo, hi int) {
		for p := op.Offsets[lo]; p < op.Offsets[hi]; p++ {
			r.Indices[p] = rows[op.Indices[p]]
		}
	}))
	g.renumbered = append(g.renumbered, renumbered{op, r})
	g.count(4 * int64(cap(r.Indices)))
	return r
}

// pulls reports whether layer's backward pass in the current step has
// the Halo make the halo rows' gradients (GradientPuller).
func (g *Block) pulls(layer int) bool {
	p, ok := g.Halo.(GradientPuller)
	return ok && p.PullsGradients(layer)
}

// gradRows is the number of rows a GCN or SAGE layer's gradient of its
// extended quantity takes in layer's backward pass: a row per source,
// without a halo or through one that needs them, and a row per
// destination through a GradientPuller that makes the others as they are
// read. Without a halo at bf16 it is 0 (scratch: the output's buffer
// holds it).
func (g *Block) gradRows(layer int, bf16 bool) int {
	if g.Halo == nil {
		if bf16 {
			return 0
		}
		return g.NumSrc
	}
	if g.pulls(layer) {
		return g.NumDst
	}
	return g.NumSrc
}

// aggregateBackward returns the owned rows' gradient of an aggregation by
// op (targets × sources) given its output's gradient dy: opT·dy (opT is
// op's transpose) with the halo rows' part returned to their owners and
// the peers' added, in place in dext's first rows (through the header
// head). The halo rows are multiplied out as the exchange asks for them,
// and dext may have the destinations' rows alone (gradRows).
func (g *Block) aggregateBackward(layer int, opT *tensor.CSR, dy, dext, head *tensor.Matrix) *tensor.Matrix {
	if g.Halo == nil {
		tensor.SpMM(dext, opT, dy)
		return dext
	}
	own := g.NumDst
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
func (g *Block) reduce(layer int, dext, head *tensor.Matrix) *tensor.Matrix {
	if g.Halo == nil {
		return dext
	}
	*head = tensor.Matrix{Rows: g.NumDst, Cols: dext.Cols, Data: dext.Data[:g.NumDst*dext.Cols]}
	g.Halo.Backward(layer, dext, head, nil)
	return head
}
