package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

// exchange connects the test Halos of the parts of one graph, which run
// concurrently in goroutines as distributed workers would.
type exchange struct {
	mu         sync.Mutex
	cond       *sync.Cond
	count, gen int
	pub        []*tensor.Matrix // what each part published in the current round
	pub16      []*tensor.MatrixBF16
	fills      []func(lo, hi int, out *tensor.Matrix) // pullHalo's
	shared     []float32                              // shareHalo's
	parts      []*localPart
	owner      []int // owner[global id] = part
	local      []int // local[global id] = row in its owner
}

// localPart is one worker's view: its targets' global ids and its sources'.
type localPart struct {
	targets, sources []int32
	g                *Block
}

// wait is a barrier for all parts.
func (e *exchange) wait() {
	e.mu.Lock()
	defer e.mu.Unlock()
	gen := e.gen
	e.count++
	if e.count == len(e.parts) {
		e.count = 0
		e.gen++
		e.cond.Broadcast()
		return
	}
	for gen == e.gen {
		e.cond.Wait()
	}
}

type testHalo struct {
	e *exchange
	p int
}

func (h testHalo) Forward(layer int, own, ext *tensor.Matrix) {
	e, me := h.e, h.e.parts[h.p]
	e.mu.Lock()
	e.pub[h.p] = own
	e.mu.Unlock()
	e.wait()
	nt := len(me.targets)
	if nt*own.Cols > 0 && &ext.Data[0] != &own.Data[0] { // own may be ext's first rows, which peers are reading
		copy(ext.Data[:nt*own.Cols], own.Data)
	}
	for k, gid := range me.sources[nt:] {
		copy(ext.Row(nt+k), e.pub[e.owner[gid]].Row(e.local[gid]))
	}
	e.wait() // nobody may reuse its rows before everyone has read them
}

func (h testHalo) ForwardBF16(layer int, ext *tensor.MatrixBF16, own int) {
	e, me := h.e, h.e.parts[h.p]
	e.mu.Lock()
	if e.pub16 == nil {
		e.pub16 = make([]*tensor.MatrixBF16, len(e.parts))
	}
	e.pub16[h.p] = ext
	e.mu.Unlock()
	e.wait()
	w := ext.Cols
	for k, gid := range me.sources[own:] {
		src := e.pub16[e.owner[gid]]
		copy(ext.Data[(own+k)*w:(own+k+1)*w], src.Data[e.local[gid]*w:(e.local[gid]+1)*w])
	}
	e.wait()
}

func (h testHalo) Backward(layer int, dext, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix)) {
	if own := dh.Rows; fill != nil {
		fill(0, dext.Rows-own, &tensor.Matrix{Rows: dext.Rows - own, Cols: dext.Cols, Data: dext.Data[own*dext.Cols:]})
	}
	e, me := h.e, h.e.parts[h.p]
	e.mu.Lock()
	e.pub[h.p] = dext
	e.mu.Unlock()
	e.wait()
	nt := len(me.targets)
	if nt*dext.Cols > 0 && &dh.Data[0] != &dext.Data[0] {
		copy(dh.Data, dext.Data[:nt*dext.Cols])
	}
	for q, other := range e.parts {
		if q == h.p {
			continue
		}
		ont := len(other.targets)
		for k, gid := range other.sources[ont:] {
			if e.owner[gid] == h.p {
				dst, src := dh.Row(e.local[gid]), e.pub[q].Row(ont+k)
				for c := range dst {
					dst[c] += src[c]
				}
			}
		}
	}
	e.wait()
}

// pieceHalo is testHalo asking for the halo rows' gradient three rows at
// a time, into a buffer of its own.
type pieceHalo struct{ testHalo }

func (h pieceHalo) Backward(layer int, dext, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix)) {
	if fill == nil {
		h.testHalo.Backward(layer, dext, dh, nil)
		return
	}
	own, w := dh.Rows, dext.Cols
	halo := dext.Rows - own
	for lo := 0; lo < halo; lo += 3 {
		hi := min(lo+3, halo)
		piece := tensor.New(hi-lo, w)
		fill(lo, hi, piece)
		copy(dext.Data[(own+lo)*w:(own+hi)*w], piece.Data)
	}
	h.testHalo.Backward(layer, dext, dh, nil)
}

// pullHalo is testHalo whose peers make the halo rows' gradients they
// read with the owner's fill, a row at a time, from their own goroutines
// (a GradientPuller): the layers pass dext with the owned rows alone.
type pullHalo struct{ testHalo }

func (h pullHalo) PullsGradients(int) bool { return true }

func (h pullHalo) Backward(layer int, dext, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix)) {
	if fill == nil {
		h.testHalo.Backward(layer, dext, dh, nil)
		return
	}
	if dext.Rows != dh.Rows {
		panic("nn: a GradientPuller was handed halo rows of the gradient")
	}
	e := h.e
	e.mu.Lock()
	if e.fills == nil {
		e.fills = make([]func(lo, hi int, out *tensor.Matrix), len(e.parts))
	}
	e.fills[h.p] = fill
	e.mu.Unlock()
	e.wait()
	if len(dh.Data) > 0 && &dh.Data[0] != &dext.Data[0] {
		copy(dh.Data, dext.Data)
	}
	row := tensor.New(1, dh.Cols)
	for q, other := range e.parts {
		if q == h.p {
			continue
		}
		ont := len(other.targets)
		for k, gid := range other.sources[ont:] {
			if e.owner[gid] == h.p {
				e.fills[q](k, k+1, row)
				dst := dh.Row(e.local[gid])
				for c := range dst {
					dst[c] += row.Data[c]
				}
			}
		}
	}
	e.wait()
}

// shareHalo is pullHalo whose parts write their rows of every per-node
// quantity into one buffer that holds every part's (a SharedHalo), their
// owned rows in part order, and aggregate over it: no halo row is copied.
type shareHalo struct{ pullHalo }

// sharedRows makes the buffer hold rows of cols float32s, once every part
// is done with it.
func (h shareHalo) sharedRows(cols int) []float32 {
	e := h.e
	e.wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.owner) * cols; len(e.shared) < n {
		e.shared = make([]float32, n)
	}
	return e.shared[:len(e.owner)*cols]
}

// first is part p's first row in the shared buffer.
func (h shareHalo) first(p int) int {
	r := 0
	for _, lp := range h.e.parts[:p] {
		r += len(lp.targets)
	}
	return r
}

func (h shareHalo) Shared(layer, cols int) (all, own *tensor.Matrix) {
	buf, lo, n := h.sharedRows(cols), h.first(h.p), len(h.e.parts[h.p].targets)
	return tensor.FromSlice(len(h.e.owner), cols, buf), tensor.FromSlice(n, cols, buf[lo*cols:(lo+n)*cols])
}

func (h shareHalo) SharedBF16(layer, cols int) (all, own *tensor.MatrixBF16) {
	buf, lo, n := h.sharedRows(cols), h.first(h.p), len(h.e.parts[h.p].targets)
	b := unsafe.Slice((*uint16)(unsafe.Pointer(&buf[0])), len(h.e.owner)*cols)
	return &tensor.MatrixBF16{Rows: len(h.e.owner), Cols: cols, Data: b},
		&tensor.MatrixBF16{Rows: n, Cols: cols, Data: b[lo*cols : (lo+n)*cols]}
}

func (h shareHalo) Written(int) { h.e.wait() }

func (h shareHalo) SourceRows() []int32 {
	rows := make([]int32, len(h.e.parts[h.p].sources))
	for j, gid := range h.e.parts[h.p].sources {
		rows[j] = int32(h.first(h.e.owner[gid]) + h.e.local[gid])
	}
	return rows
}

// partition splits g among parts by owner, building each part's local
// operators with global degrees, as a distributed trainer would.
func partition(t *testing.T, g *graph.Graph, owner []int, parts int) *exchange {
	t.Helper()
	e := &exchange{owner: owner, local: make([]int, g.N), pub: make([]*tensor.Matrix, parts)}
	e.cond = sync.NewCond(&e.mu)
	nbrs := func(v int32) []int32 { // in-neighbours without the self loop
		return slices.DeleteFunc(slices.Clone(g.Adj(int(v))), func(u int32) bool { return u == v })
	}
	for p := 0; p < parts; p++ {
		lp := &localPart{}
		for v := 0; v < g.N; v++ {
			if owner[v] == p {
				e.local[v] = len(lp.targets)
				lp.targets = append(lp.targets, int32(v))
			}
		}
		localID := map[int32]int32{}
		for i, v := range lp.targets {
			localID[v] = int32(i)
		}
		lp.sources = slices.Clone(lp.targets)
		var halo []int32
		for _, v := range lp.targets {
			for _, u := range nbrs(v) {
				if owner[u] != p && !slices.Contains(halo, u) {
					halo = append(halo, u)
				}
			}
		}
		slices.Sort(halo)
		for _, u := range halo {
			localID[u] = int32(len(lp.sources))
			lp.sources = append(lp.sources, u)
		}
		build := func(loops bool) *tensor.CSR {
			a := &tensor.CSR{Rows: len(lp.targets), Cols: len(lp.sources), Offsets: []int64{0}}
			for _, v := range lp.targets {
				row := nbrs(v)
				if loops {
					row = append(row, v)
				}
				local := make([]int32, len(row))
				for i, u := range row {
					local[i] = localID[u]
				}
				slices.Sort(local)
				a.Indices = append(a.Indices, local...)
				a.Offsets = append(a.Offsets, int64(len(a.Indices)))
			}
			return a
		}
		deg := func(ids []int32, loop int32) []int32 {
			d := make([]int32, len(ids))
			for i, v := range ids {
				d[i] = int32(len(nbrs(v))) + loop
			}
			return d
		}
		loops := build(true)
		gcn, err := graph.GCNNormWithDegrees(loops, deg(lp.targets, 1), deg(lp.sources, 1))
		if err != nil {
			t.Fatal(err)
		}
		mean, err := graph.MeanNormWithDegrees(build(false), deg(lp.targets, 0))
		if err != nil {
			t.Fatal(err)
		}
		lp.g, err = NewBlock(Operators{Loops: loops, GCN: gcn, Mean: mean}, lp.sources, testHalo{e, p})
		if err != nil {
			t.Fatal(err)
		}
		e.parts = append(e.parts, lp)
	}
	return e
}

func selectRows(m *tensor.Matrix, rows []int32) *tensor.Matrix {
	out := tensor.New(len(rows), m.Cols)
	for i, r := range rows {
		copy(out.Row(i), m.Row(int(r)))
	}
	return out
}

func closeTo(a, b float32) bool {
	return math.Abs(float64(a-b)) <= 1e-5+1e-4*math.Abs(float64(b))
}

// TestPartitionedEqualsWhole proves the Halo contract: every model, run on
// two (or three) parts of a graph that exchange halo rows, gives the
// whole-graph logits, and its parameter gradients sum to the whole graph's.
// Dropout is on, so this also checks that dropout does not depend on the
// partitioning. With three parts the halo asks GCN and SAGE for the halo
// rows' gradient a piece at a time; with four the peers make the rows they
// read with the owner's fill (a GradientPuller); with five they also
// share one buffer of every part's rows (a SharedHalo). At bf16
// (SetBF16, dense features in bf16) the halo moves bf16 rows, and the
// parts still give the whole graph's logits and gradients.
func TestPartitionedEqualsWhole(t *testing.T) {
	const n, in, classes = 40, 12, 4
	gg := randomGraph(t, n, 4, 31)
	for _, parts := range []int{2, 3, 4, 5} {
		for _, model := range []string{"gcn", "sage", "sage-normalize", "gat", "gcn-bf16", "sage-bf16", "gat-bf16", "gcn-bf16-4", "sage-bf16-4"} {
			for _, storage := range []Storage{ForceDense, ForceSparse} {
				name := model + map[Storage]string{ForceDense: "/dense", ForceSparse: "/sparse"}[storage]
				model, four := strings.CutSuffix(model, "-4") // four layers: two hidden outputs held in bf16
				layers := 3
				if four {
					layers = 4
				}
				model, bf16 := strings.CutSuffix(model, "-bf16")
				model, normalize := strings.CutSuffix(model, "-normalize")
				features := func(x *tensor.Matrix) Features {
					f := NewFeatures(x, storage)
					if bf16 && f.Dense != nil {
						f = BF16Features(tensor.MatrixToBF16(f.Dense))
					}
					return f
				}
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(parts), 5))
					x := randomMatrix(n, in, rng)
					for i := range x.Data {
						if rng.Float64() < 0.7 {
							x.Data[i] = 0
						}
					}
					owner := make([]int, n)
					for v := range owner {
						owner[v] = rng.IntN(parts)
					}
					cfg := Config{Model: model, InFeatures: in, Hidden: 6, Classes: classes, Layers: layers, Heads: 2,
						Dropout: 0.3, AttentionDropout: 0.3, Seed: 8, Normalize: normalize}
					whole, err := NewModel(cfg)
					if err != nil {
						t.Fatal(err)
					}
					whole.SetBF16(bf16)
					whole.Forward([]*Block{WholeGraph(gg)}, features(x), true) // advance the step once
					logits := whole.Forward([]*Block{WholeGraph(gg)}, features(x), true).Clone()
					r := randomMatrix(n, classes, rng)
					whole.Backward(r)

					e := partition(t, gg, owner, parts)
					for _, lp := range e.parts {
						switch parts {
						case 3:
							lp.g.Halo = pieceHalo{lp.g.Halo.(testHalo)}
						case 4:
							lp.g.Halo = pullHalo{lp.g.Halo.(testHalo)}
						case 5:
							lp.g.Halo = shareHalo{pullHalo{lp.g.Halo.(testHalo)}}
						}
					}
					models := make([]*Model, parts)
					outs := make([]*tensor.Matrix, parts)
					var wg sync.WaitGroup
					for p, lp := range e.parts {
						models[p], _ = NewModel(cfg)
						models[p].SetStep(1)
						models[p].SetBF16(bf16)
						feats := features(selectRows(x, lp.targets))
						wg.Add(1)
						go func() {
							defer wg.Done()
							outs[p] = models[p].Forward([]*Block{lp.g}, feats, true)
							models[p].Backward(selectRows(r, lp.targets))
						}()
					}
					wg.Wait()
					if parts == 5 && model != "gat" {
						// The parts share their rows: no transient of their own.
						for p := range e.parts {
							if h := transientOf(models[p]); h != nil {
								t.Fatalf("part %d made a transient of %d float32s", p, cap(h.Data))
							}
						}
					} else if bf16 && model != "gat" {
						// The bf16 projection and the backward pass's float32
						// gradient of the aggregation share the transient: one
						// float32 row per source, as wide as the widest layer;
						// or, where the peers make the halo rows' gradients
						// (pullHalo), the larger of the bf16 projection and a
						// float32 row per destination.
						for p, lp := range e.parts {
							want := lp.g.NumSrc * cfg.Hidden
							if parts == 4 {
								want = max((lp.g.NumSrc*cfg.Hidden+1)/2, lp.g.NumDst*cfg.Hidden)
							}
							if h := transientOf(models[p]); cap(h.Data) != want {
								t.Fatalf("part %d: a transient of %d float32s for %d sources and %d destinations of %d columns, want %d", p, cap(h.Data), lp.g.NumSrc, lp.g.NumDst, cfg.Hidden, want)
							}
						}
					}
					for p, lp := range e.parts {
						for i, v := range lp.targets {
							for c := 0; c < classes; c++ {
								if got, want := outs[p].At(i, c), logits.At(int(v), c); !closeTo(got, want) {
									t.Fatalf("part %d, node %d, class %d: logit %v, whole graph %v", p, v, c, got, want)
								}
							}
						}
					}
					for k, wp := range whole.Params() {
						for j, want := range wp.Grad.Data {
							var got float32
							for p := range models {
								got += models[p].Params()[k].Grad.Data[j]
							}
							if !closeTo(got, want) {
								t.Fatalf("%s[%d]: summed gradient %v, whole graph %v", wp.Name, j, got, want)
							}
						}
					}
				})
			}
		}
	}
}

// transientOf is the transient buffer shared by m's GCN or SAGE layers.
func transientOf(m *Model) *tensor.Matrix {
	switch l := m.Layers[0].(type) {
	case *GCN:
		return *l.work.slot()
	case *SAGE:
		return *l.work.slot()
	}
	return nil
}

func TestNewBlockErrors(t *testing.T) {
	loops := &tensor.CSR{Rows: 2, Cols: 3, Offsets: []int64{0, 2, 3}, Indices: []int32{0, 2, 1}}
	noLoop := &tensor.CSR{Rows: 2, Cols: 3, Offsets: []int64{0, 1, 2}, Indices: []int32{2, 1}}
	other := &tensor.CSR{Rows: 2, Cols: 2, Offsets: []int64{0, 0, 0}}
	halo := testHalo{}
	for _, tc := range []struct {
		name string
		ops  Operators
		ids  []int32
		halo Halo
	}{
		{"no operators", Operators{}, []int32{0, 1, 2}, halo},
		{"shape mismatch", Operators{Loops: loops, Mean: other}, []int32{0, 1, 2}, halo},
		{"missing ids", Operators{Loops: loops}, nil, halo},
		{"wrong id count", Operators{Loops: loops}, []int32{0, 1}, halo},
		{"no self loop", Operators{Loops: noLoop}, []int32{0, 1, 2}, halo},
	} {
		if _, err := NewBlock(tc.ops, tc.ids, tc.halo); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if b, err := NewBlock(Operators{Loops: loops}, []int32{4, 7, 9}, halo); err != nil || b.InputRows() != 2 {
		t.Errorf("a partition's block: %v, %d input rows, want 2", err, b.InputRows())
	}
	// Without a halo exchange the block is a sampled one: its input has a
	// row per source.
	if b, err := NewBlock(Operators{Loops: loops}, []int32{4, 7, 9}, nil); err != nil || b.InputRows() != 3 {
		t.Errorf("a sampled block: %v, %d input rows, want 3", err, b.InputRows())
	}
}
