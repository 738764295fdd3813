package halo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

func testLayout(t *testing.T, n, k int, seed uint64) (*graph.Graph, *partition.Layout) {
	t.Helper()
	g, err := graph.ErdosRenyi(n, 0.05, seed)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := partition.Random{}.Partition(g, k, partition.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	l, err := partition.BuildLayout(g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	return g, l
}

func randomRows(r *rand.Rand, rows, cols int) *tensor.Matrix {
	m := tensor.New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64())
	}
	return m
}

// forwardOwned runs a training pass's layer-0 exchange of part p's rows of
// global and returns them and the extended rows it produced.
func forwardOwned(e *Exchange, p *partition.Part, global *tensor.Matrix) (h, ext *tensor.Matrix, err error) {
	h = tensor.New(len(p.Owned), global.Cols)
	for i, v := range p.Owned {
		copy(h.Row(i), global.Row(int(v)))
	}
	ext = tensor.New(len(p.Owned)+len(p.Halo), global.Cols)
	e.Begin(0, true)
	e.Forward(0, h, ext)
	return h, ext, e.Err()
}

// copyingComm is a communicator that puts received messages in buffers of
// its own instead of filling the ones it is given, as the Communicator
// contract allows; the exchange's uncompressed passes, which receive in
// place when they can, must work with it too.
type copyingComm struct{ comm.Communicator }

func (c copyingComm) AllToAll(site string, send, recv [][]byte) error {
	fresh := make([][]byte, len(recv))
	if err := c.Communicator.AllToAll(site, send, fresh); err != nil {
		return err
	}
	copy(recv, fresh)
	return nil
}

// transports runs f on k in-process workers in each way the exchange can
// move rows: the communicator as it is, wrapped in copyingComm, and (for
// uncompressed passes) through the codec path that a host whose float32s
// are not in wire order takes. after, if not nil, checks each way's result.
func transports(t *testing.T, k int, f func(c comm.Communicator) error, after func() error) {
	t.Helper()
	defer func(wire bool) { compress.HostIsWireOrder = wire }(compress.HostIsWireOrder)
	for _, way := range []string{"in place", "copying communicator", "codec path"} {
		compress.HostIsWireOrder = way != "codec path"
		err := comm.Run(k, func(c comm.Communicator) error {
			if way == "copying communicator" {
				c = copyingComm{c}
			}
			return f(c)
		})
		if err == nil && after != nil {
			err = after()
		}
		if err != nil {
			t.Fatalf("%s: %v", way, err)
		}
	}
}

// Without compression every worker's extended rows are exactly the global
// rows of its owned and halo nodes.
func TestExchangeDeliversHaloRows(t *testing.T) {
	const n, k, w = 120, 4, 5
	_, l := testLayout(t, n, k, 3)
	global := randomRows(rand.New(rand.NewPCG(1, 2)), n, w)
	transports(t, k, func(c comm.Communicator) error {
		p := &l.Parts[c.Rank()]
		e, err := New(c, p, Config{Seed: 1, Layers: 2})
		if err != nil {
			return err
		}
		_, ext, err := forwardOwned(e, p, global)
		if err != nil {
			return err
		}
		for col := range ext.Rows {
			v := p.Global(int32(col))
			for j := range w {
				if ext.At(col, j) != global.At(int(v), j) {
					return fmt.Errorf("rank %d: source %d (node %d) col %d = %v, want %v", c.Rank(), col, v, j, ext.At(col, j), global.At(int(v), j))
				}
			}
		}
		return nil
	}, nil)
}

// With a codec whose rows encode to a fixed size the exchange encodes each
// boundary row once; the messages must be the bytes that encoding each
// peer's rows gives, whether the communicator sends the rows from the
// shared encoding (the in-process group) or comm.Rows copies them into a
// message per peer (copyingComm, as any other transport), and whether or
// not each peer's rows ascend (a part file may list them in another
// order). At width 4100 the exchange encodes and decodes a few rows at a
// time.
func TestExchangeEncodesSharedRowsOnce(t *testing.T) {
	for _, w := range []int{16, 4100} {
		for _, wrap := range []bool{false, true} {
			for _, reversed := range []bool{false, true} {
				testExchangeEncodesSharedRowsOnce(t, w, wrap, reversed)
			}
		}
	}
}

func testExchangeEncodesSharedRowsOnce(t *testing.T, w int, wrap, reversed bool) {
	const n, k, ratio = 120, 4, 3.0
	_, l := testLayout(t, n, k, 5)
	if reversed { // each sender lists its rows backwards, as its receiver's halo block does
		for p := range l.Parts {
			for q := range l.Parts {
				if p != q {
					slices.Reverse(l.Parts[p].Send[q])
					slices.Reverse(l.Parts[q].Halo[l.Parts[q].HaloStart[p]:l.Parts[q].HaloStart[p+1]])
				}
			}
		}
	}
	global := randomRows(rand.New(rand.NewPCG(4, 2)), n, w)
	err := comm.Run(k, func(c comm.Communicator) error {
		if wrap { // not the group: comm.Rows copies each peer's rows into a message
			c = copyingComm{c}
		}
		p := &l.Parts[c.Rank()]
		codec, _ := compress.New("topk")
		if codec.Caps().Rows == nil {
			return fmt.Errorf("topk does not encode rows to a fixed size")
		}
		e, err := New(c, p, Config{Codec: codec, Schedule: compress.Fixed(ratio), Seed: 1, Layers: 2})
		if err != nil {
			return err
		}
		h, _, err := forwardOwned(e, p, global)
		if err != nil {
			return err
		}
		shared := 0
		for q, rows := range p.Send {
			if q == c.Rank() {
				continue
			}
			shared += len(rows)
			x := tensor.New(len(rows), w)
			for i, r := range rows {
				copy(x.Row(i), h.Row(int(r)))
			}
			own, _ := compress.New("topk")
			want := own.Encode(nil, x.Data, len(rows), w, ratio, compress.Key{})
			halo := p.HaloBlock(q)
			y := tensor.New(len(halo), w)
			for i, v := range halo {
				copy(y.Row(i), global.Row(int(v)))
			}
			if got := own.Encode(nil, y.Data, len(halo), w, ratio, compress.Key{}); string(e.recv[q]) != string(got) {
				return fmt.Errorf("rank %d: message from %d differs from encoding its rows", c.Rank(), q)
			}
			// topk is a GradCoder: the exchange keeps the columns of what
			// it sent and received for the backward pass.
			if err := e.keeper.beginBackward(0, 0); err != nil {
				return err
			}
			gc := own.Caps().Grad
			kept := e.keeper.layers[0]
			for _, m := range []struct {
				kept, msg []byte
				rows      int
			}{{kept.sent[q], want, len(rows)}, {kept.recv[q], e.recv[q], p.HaloStart[q+1] - p.HaloStart[q]}} {
				cols, err := gc.Columns(nil, m.msg, m.rows, w, ratio)
				if err != nil || string(m.kept) != string(cols) {
					return fmt.Errorf("rank %d: kept columns of a message with %d differ from the message's (%v)", c.Rank(), q, err)
				}
			}
		}
		if shared <= len(e.plan.boundary) {
			return fmt.Errorf("rank %d: no row goes to two peers (%d sends, %d rows); the test proves nothing", c.Rank(), shared, len(e.plan.boundary))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("width %d, copying communicator %v, rows reversed %v: %v", w, wrap, reversed, err)
	}
}

// The exchange is a linear map E from the owned rows of all workers to the
// extended rows of all workers; Backward must be its adjoint: summed over
// workers, <E h, g> = <h, Eᵀ g>. This holds exactly for the linear
// compressors (none, truncate, subspace), which is what makes compressed
// training compute true gradients of the compressed forward pass.
func TestExchangeBackwardIsAdjoint(t *testing.T) {
	const n, k = 150, 3
	_, l := testLayout(t, n, k, 5)
	// At width 4100 a gradient message is decoded a few rows at a time
	// (addGradients); top-k names its columns by a bitmap at ratio 3 and
	// by indices at 16.
	for _, w := range []int{12, 4100} {
		for _, ratio := range []float64{3, 16} {
			testExchangeBackwardIsAdjoint(t, l, k, w, ratio)
		}
	}
}

func testExchangeBackwardIsAdjoint(t *testing.T, l *partition.Layout, k, w int, ratio float64) {
	// Two steps of two compressed layers, both forwards before both
	// backwards as in a model, with fresh rows each time: a backward that
	// answered another layer's or step's forward (top-k picks its columns
	// by the values) breaks the identity.
	const steps, layers = 2, 2
	type pass struct{ step, layer int }
	for _, name := range []string{"none", "truncate", "subspace", "topk"} {
		sums := make([]map[pass][2]float64, k)
		transports(t, k, func(c comm.Communicator) error {
			sums[c.Rank()] = map[pass][2]float64{}
			p := &l.Parts[c.Rank()]
			codec, _ := compress.New(name)
			e, err := New(c, p, Config{Codec: codec, Schedule: compress.Fixed(ratio), Seed: 9, Layers: layers + 1})
			if err != nil {
				return err
			}
			r := rand.New(rand.NewPCG(uint64(c.Rank()), 7))
			for step := 4; step < 4+steps; step++ {
				var h, g, ext, dh [layers]*tensor.Matrix
				e.Begin(step, true)
				for layer := range layers {
					h[layer] = randomRows(r, len(p.Owned), w)
					g[layer] = randomRows(r, len(p.Owned)+len(p.Halo), w)
					ext[layer] = tensor.New(g[layer].Rows, w)
					dh[layer] = tensor.New(h[layer].Rows, w)
					e.Forward(layer, h[layer], ext[layer])
				}
				for layer := layers - 1; layer >= 0; layer-- {
					e.Backward(layer, g[layer], dh[layer], nil)
				}
				if e.Err() != nil {
					return e.Err()
				}
				if got := e.Ratio(layers - 1); got != ratio {
					return fmt.Errorf("ratio %v, want %v", got, ratio)
				}
				for layer := range layers {
					var s [2]float64
					for i := range ext[layer].Data {
						s[0] += float64(ext[layer].Data[i]) * float64(g[layer].Data[i])
					}
					for i := range h[layer].Data {
						s[1] += float64(h[layer].Data[i]) * float64(dh[layer].Data[i])
					}
					sums[c.Rank()][pass{step, layer}] = s
				}
			}
			return nil
		}, func() error {
			for ps := range sums[0] {
				var lhs, rhs float64
				for _, s := range sums {
					lhs, rhs = lhs+s[ps][0], rhs+s[ps][1]
				}
				if math.Abs(lhs-rhs) > 1e-4*(1+math.Abs(lhs)) {
					return fmt.Errorf("%s, width %d, ratio %v, step %d, layer %d: <E h, g> = %v but <h, Eᵀ g> = %v", name, w, ratio, ps.step, ps.layer, lhs, rhs)
				}
			}
			if len(sums[0]) != steps*layers {
				return fmt.Errorf("%d passes checked, want %d", len(sums[0]), steps*layers)
			}
			return nil
		})
	}
}

// Backward with a fill function, where the layer writes the halo rows' gradient a piece at
// a time as the exchange asks (a GradCoder or RowEncoder encodes each
// piece as it is made; the quantisers get them all first), must return
// the owned rows the same bits as Backward given every row, on the
// compressed layer and on the last, uncompressed one. Both passes run the
// same step, so keyed codecs pick the same columns; at width 4100 a piece
// is a few rows.
func TestExchangeBackwardRowsMatchesBackward(t *testing.T) {
	const n, k, layers = 150, 3, 2
	_, l := testLayout(t, n, k, 5)
	for _, w := range []int{12, 4100} {
		for _, ratio := range []float64{1, 3, 16} {
			for _, name := range compress.Names() {
				if c, _ := compress.New(name); c.Caps().Streaming != nil {
					continue // repeating a pass moves a streaming codec's state on: TestExchangeStreaming checks it
				}
				transports(t, k, func(c comm.Communicator) error {
					p := &l.Parts[c.Rank()]
					codec, _ := compress.New(name)
					e, err := New(c, p, Config{Codec: codec, Schedule: compress.Fixed(ratio), Seed: 9, Layers: layers})
					if err != nil {
						return err
					}
					r := rand.New(rand.NewPCG(uint64(c.Rank()), 3))
					h := randomRows(r, len(p.Owned), w)
					g := randomRows(r, len(p.Owned)+len(p.Halo), w)
					for layer := range layers {
						var dh [2]*tensor.Matrix
						var pieces []int
						for i := range dh {
							e.Begin(4, true)
							ext := tensor.New(g.Rows, w)
							e.Forward(layer, h, ext)
							dext := g.Clone()
							dh[i] = tensor.New(h.Rows, w)
							if i == 0 {
								e.Backward(layer, dext, dh[i], nil)
								continue
							}
							halo := g.Data[h.Rows*w:]
							clear(dext.Data[h.Rows*w:]) // BackwardRows must not read them
							var mu sync.Mutex           // in process the peers call fill, concurrently
							e.Backward(layer, dext, dh[i], func(lo, hi int, out *tensor.Matrix) {
								copy(out.Data, halo[lo*w:hi*w])
								mu.Lock()
								pieces = append(pieces, hi-lo)
								mu.Unlock()
							})
						}
						if e.Err() != nil {
							return e.Err()
						}
						filled := 0
						for _, rows := range pieces {
							filled += rows
						}
						if filled != len(p.Halo) {
							return fmt.Errorf("%s, layer %d: fill wrote %d halo rows, want %d", name, layer, filled, len(p.Halo))
						}
						// Through a codec, pieces of a few rows at width 4100
						// unless the codec must see the message whole; and
						// uncompressed in process, where the peers make the
						// rows they read a piece at a time.
						if w == 4100 && len(p.Halo) > 3 {
							want := e.codecFor(layer).Caps().RowByRow && !e.uncompressed(layer) || e.PullsGradients(layer)
							if want != (slices.Max(pieces) <= max(1, rowChunk/w)) {
								return fmt.Errorf("%s, layer %d: fill pieces %v, want pieces: %v", name, layer, pieces, want)
							}
						}
						for j := range dh[0].Data {
							if math.Float32bits(dh[0].Data[j]) != math.Float32bits(dh[1].Data[j]) {
								return fmt.Errorf("%s, width %d, ratio %v, layer %d: owned gradient %d is %v by rows, %v whole", name, w, ratio, layer, j, dh[1].Data[j], dh[0].Data[j])
							}
						}
					}
					return nil
				}, nil)
			}
		}
	}
}

// "The input of the last layer is never compressed", and evaluation passes
// see the model uncompressed: whatever the compressor, those exchanges
// deliver the halo rows exactly, while a training layer before the last
// does compress (quantisers and bf16 ignore the ratio, so the exchange must
// not hand them the uncompressed passes).
func TestExchangeCompressesOnlyTrainingLayersBeforeTheLast(t *testing.T) {
	const n, k, w, layers = 60, 2, 16, 3
	_, l := testLayout(t, n, k, 1)
	global := randomRows(rand.New(rand.NewPCG(7, 1)), n, w)
	for _, name := range compress.Names() {
		t.Run(name, func(t *testing.T) {
			transports(t, k, func(c comm.Communicator) error {
				p := &l.Parts[c.Rank()]
				codec, _ := compress.New(name)
				e, err := New(c, p, Config{Codec: codec, Schedule: compress.Fixed(8), Seed: 1, Layers: layers})
				if err != nil {
					return err
				}
				h := tensor.New(len(p.Owned), w)
				for i, v := range p.Owned {
					copy(h.Row(i), global.Row(int(v)))
				}
				exactHalo := func(layer int) (bool, error) {
					ext := tensor.New(len(p.Owned)+len(p.Halo), w)
					e.Forward(layer, h, ext)
					if e.Err() != nil {
						return false, e.Err()
					}
					for col := len(p.Owned); col < ext.Rows; col++ {
						for j := range w {
							if ext.At(col, j) != global.At(int(p.Global(int32(col))), j) {
								return false, nil
							}
						}
					}
					return true, nil
				}
				e.Begin(0, true)
				if e.Ratio(0) != 8 || e.Ratio(1) != 8 || e.Ratio(2) != 1 {
					return fmt.Errorf("training ratios %v %v %v, want 8 8 1", e.Ratio(0), e.Ratio(1), e.Ratio(2))
				}
				exact, err := exactHalo(0)
				if err != nil {
					return err
				}
				if exact != (name == "none" || name == "entropy") { // entropy alone is entropy:none, lossless
					return fmt.Errorf("training layer 0 delivered exact rows: %v", exact)
				}
				if exact, err = exactHalo(layers - 1); !exact || err != nil {
					return fmt.Errorf("training, last layer: exact %v, error %v", exact, err)
				}
				e.Backward(layers-1, tensor.New(len(p.Owned)+len(p.Halo), w), tensor.New(len(p.Owned), w), nil)
				if e.Err() != nil {
					return fmt.Errorf("training, last layer backward: %v", e.Err())
				}
				e.Begin(0, false)
				if e.Ratio(0) != 1 {
					return fmt.Errorf("evaluation ratio %v, want 1", e.Ratio(0))
				}
				for layer := range layers {
					if exact, err = exactHalo(layer); !exact || err != nil {
						return fmt.Errorf("evaluation, layer %d: exact %v, error %v", layer, exact, err)
					}
				}
				return nil
			}, nil)
		})
	}
}

// A GradCoder's backward needs the forward columns of the same step: a
// backward pass without them is an error, not a panic or stale columns.
func TestExchangeGradCoderBackwardNeedsItsForward(t *testing.T) {
	_, l := testLayout(t, 60, 2, 1)
	err := comm.Run(2, func(c comm.Communicator) error {
		p := &l.Parts[c.Rank()]
		codec, _ := compress.New("topk")
		e, err := New(c, p, Config{Codec: codec, Schedule: compress.Fixed(4), Seed: 1, Layers: 3})
		if err != nil {
			return err
		}
		global := randomRows(rand.New(rand.NewPCG(3, 3)), 60, 8)
		if _, _, err := forwardOwned(e, p, global); err != nil { // step 0
			return err
		}
		e.Begin(1, true)
		e.Backward(0, tensor.New(len(p.Owned)+len(p.Halo), 8), tensor.New(len(p.Owned), 8), nil)
		if e.Err() == nil {
			return fmt.Errorf("backward of step 1 used step 0's forward columns")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A streaming codec (delta) goes through the exchange whole, in both
// directions: at 32 bits and threshold 0 every training pass delivers the
// halo rows and returns the owned rows' gradients exactly as codec none
// does, step after step; with a threshold no change reaches, the messages
// after the first are bitmaps only, and the halo rows stay as first sent.
func TestExchangeStreaming(t *testing.T) {
	const n, k, w, layers, steps = 90, 3, 8, 2, 4
	_, l := testLayout(t, n, k, 4)
	type result struct{ ext, dh [][]float32 }
	runWith := func(name string) ([]result, []int64, error) {
		res := make([]result, k)
		fwdBytes := make([]int64, k)
		err := comm.Run(k, func(c comm.Communicator) error {
			p := &l.Parts[c.Rank()]
			codec, err := compress.New(name)
			if err != nil {
				return err
			}
			e, err := New(c, p, Config{Codec: codec, Seed: 2, Layers: layers})
			if err != nil {
				return err
			}
			r := rand.New(rand.NewPCG(uint64(c.Rank()), 8))
			h := randomRows(r, len(p.Owned), w)
			for step := range steps {
				for i := range h.Data {
					h.Data[i] += 0.01 * float32(r.NormFloat64())
				}
				e.Begin(step, true)
				ext := tensor.New(len(p.Owned)+len(p.Halo), w)
				e.Forward(0, h, ext)
				dext := randomRows(r, ext.Rows, w)
				dh := tensor.New(h.Rows, w)
				e.Backward(0, dext, dh, nil)
				if e.Err() != nil {
					return e.Err()
				}
				res[c.Rank()].ext = append(res[c.Rank()].ext, ext.Data)
				res[c.Rank()].dh = append(res[c.Rank()].dh, dh.Data)
				if step == 0 {
					fwdBytes[c.Rank()] = c.Stats().Site(ForwardSites + "0").BytesSent
				}
			}
			fwdBytes[c.Rank()] = c.Stats().Site(ForwardSites+"0").BytesSent - fwdBytes[c.Rank()]
			return nil
		})
		return res, fwdBytes, err
	}
	want, _, err := runWith("none")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := runWith("delta:32:0")
	if err != nil {
		t.Fatal(err)
	}
	for r := range want {
		for s := range steps {
			if !slices.Equal(want[r].ext[s], got[r].ext[s]) || !slices.Equal(want[r].dh[s], got[r].dh[s]) {
				t.Fatalf("rank %d step %d: delta:32:0 differs from none", r, s)
			}
		}
	}
	frozen, bytes, err := runWith("delta:4:1e9:0:delta")
	if err != nil {
		t.Fatal(err)
	}
	for r := range frozen {
		p := &l.Parts[r]
		var bitmaps int64
		for q, rows := range p.Send {
			if q != r {
				bitmaps += int64((len(rows) + 7) / 8)
			}
		}
		if bytes[r] != (steps-1)*bitmaps {
			t.Fatalf("rank %d: steps 1–%d sent %d forward bytes, want their bitmaps' %d", r, steps-1, bytes[r], (steps-1)*bitmaps)
		}
		for s := 1; s < steps; s++ {
			if !slices.Equal(frozen[r].ext[s][len(p.Owned)*w:], frozen[r].ext[0][len(p.Owned)*w:]) {
				t.Fatalf("rank %d step %d: skipped halo rows changed", r, s)
			}
		}
	}
}

// With CompressLast the last layer's training exchange goes through the
// codec too (and evaluation passes still do not).
func TestExchangeCompressLast(t *testing.T) {
	const n, k, w, layers = 60, 2, 16, 2
	_, l := testLayout(t, n, k, 1)
	global := randomRows(rand.New(rand.NewPCG(7, 1)), n, w)
	for _, last := range []bool{false, true} {
		err := comm.Run(k, func(c comm.Communicator) error {
			p := &l.Parts[c.Rank()]
			codec, _ := compress.New("quant2")
			e, err := New(c, p, Config{Codec: codec, Seed: 1, Layers: layers, CompressLast: last})
			if err != nil {
				return err
			}
			h := tensor.New(len(p.Owned), w)
			for i, v := range p.Owned {
				copy(h.Row(i), global.Row(int(v)))
			}
			for _, training := range []bool{true, false} {
				e.Begin(0, training)
				ext := tensor.New(len(p.Owned)+len(p.Halo), w)
				e.Forward(layers-1, h, ext)
				if e.Err() != nil {
					return e.Err()
				}
				exact := true
				for row := len(p.Owned); row < ext.Rows; row++ {
					exact = exact && slices.Equal(ext.Row(row), global.Row(int(p.Global(int32(row)))))
				}
				if want := !(training && last); exact != want {
					return fmt.Errorf("CompressLast %v, training %v: the last layer's rows exact: %v", last, training, exact)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
