package dataparallel

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
)

// Evaluation in the in-process group (comm.Direct) shares its rows: each
// layer's input is one buffer of the group, a row per node of the graph,
// into which every worker writes its own nodes' rows, and from which each
// reads the rows a slice of its destinations aggregates. The group then
// holds each hidden layer's rows of every node once, as one process's
// evaluation does, rather than each worker holding its own nodes' and all
// their neighbours' (on a graph cut into parts by a partitioner that
// leaves most nodes someone's neighbour, nearly every node's, on every
// worker: N copies of the layer). A worker computes its destinations a
// slice at a time, so it never holds its whole neighbourhood gathered
// either. The traffic is counted as the exchange of the rows each worker
// would have fetched (its neighbours' of other parts, once a layer).

// Sites of the shared buffers: the layers' rows, ping-pong.
var sharedEvalSites = [2]string{EvalSite + ".shared.0", EvalSite + ".shared.1"}

// evalChunkBytes bounds the gathered input rows of one slice of
// destinations, as one process's evaluation does.
const evalChunkBytes = 64 << 20

// evalKeepBytes: shared buffers up to this size are kept from one
// evaluation to the next; larger ones are given back to the group.
const evalKeepBytes = 256 << 20

// sharedEval is an evaluator's state for the shared path.
type sharedEval struct {
	counted     bool
	ask, at     []int // per worker: the distinct nodes of it this worker reads, and it of this one's
	sent, recvd []int // per worker: the bytes of a layer's exchange, as counted
	in          tensor.Matrix
	drawn       sample.Rows
	block       sample.Batch // a slice's
	chunkNodes  int          // destinations a slice
	holds       bool         // the group's buffers, kept from the last evaluation
	holder      comm.Holder  // this evaluator's hold of them
}

// hiddenWidth is the width of the hidden layers' outputs, every hidden
// layer's (a one-layer model's: its output's).
func (e *evaluator) hiddenWidth() int { return e.model.OutputWidth(0) }

// countRows finds, once, the rows each worker reads of every other's: the
// distinct nodes of other parts among its nodes' neighbours, and tells
// each worker how many of its nodes this one reads.
func (e *evaluator) countRows() error {
	s := &e.shared
	sh := e.sh
	s.ask, s.at = make([]int, sh.size), make([]int, sh.size)
	seen := make([]bool, sh.n)
	g := sh.pg.Graph
	for _, v := range sh.owned {
		for _, u := range g.Neighbors[g.Offsets[v]:g.Offsets[v+1]] {
			if q := sh.owner[u]; int(q) != sh.rank && !seen[u] {
				seen[u] = true
				s.ask[q]++
			}
		}
	}
	send, recv := make([][]byte, sh.size), make([][]byte, sh.size)
	for q := range send {
		send[q] = binary.LittleEndian.AppendUint64(nil, uint64(s.ask[q]))
	}
	if err := sh.c.AllToAll(EvalSite, send, recv); err != nil {
		return fmt.Errorf("dataparallel: exchanging evaluation's row counts: %w", err)
	}
	for q, b := range recv {
		if q == sh.rank {
			continue
		}
		if len(b) != 8 {
			return fmt.Errorf("dataparallel: rank %d sent %d bytes of evaluation's row counts", q, len(b))
		}
		s.at[q] = int(binary.LittleEndian.Uint64(b))
	}
	s.sent, s.recvd = make([]int, sh.size), make([]int, sh.size)
	edges := int(g.Offsets[g.N]) // the owned nodes' only
	avgDegree := float64(edges)/float64(max(len(sh.owned), 1)) + 1
	s.chunkNodes = max(int(evalChunkBytes/(4*float64(max(sh.x.cols(), e.hiddenWidth()))*avgDegree)), 256)
	if e.chunk > 0 {
		s.chunkNodes = e.chunk
	}
	s.counted = true
	return nil
}

// exchanged is the barrier after which every worker reads the rows the
// others wrote, counted as the exchange of rowBytes-byte rows (with their
// 4-byte ids) that fetching them would have been.
func (e *evaluator) exchanged(d comm.Direct, rowBytes int) error {
	s := &e.shared
	for q := range s.sent {
		s.sent[q], s.recvd[q] = s.at[q]*(4+rowBytes), s.ask[q]*(4+rowBytes)
	}
	return d.AllToAllShared(EvalSite, s.sent, s.recvd)
}

// share returns the group's buffer i of size bytes as float32s.
func (e *evaluator) share(d comm.Direct, i, size int) ([]float32, error) {
	if e.shared.holder == 0 {
		e.shared.holder = comm.NewHolder()
	}
	b, grew, err := d.Share(sharedEvalSites[i], e.shared.holder, size)
	if err != nil {
		return nil, fmt.Errorf("dataparallel: sharing evaluation's rows: %w", err)
	}
	memacct.Add(memacct.Activations, int64(grew))
	e.shared.holds = true
	if len(b) < 4 {
		return nil, nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4), nil
}

// unshare gives back the shared buffers if they are large (size bytes
// together).
func (e *evaluator) unshare(d comm.Direct, size int) {
	if size <= evalKeepBytes {
		return
	}
	e.shared.holds = false
	for _, site := range sharedEvalSites {
		memacct.Add(memacct.Activations, -int64(d.Unshare(site, e.shared.holder)))
	}
}

// evaluateShared computes the last layer's outputs of the worker's nodes
// into e.cur, every layer's input from the group's shared rows.
func (e *evaluator) evaluateShared(d comm.Direct) error {
	if !e.shared.counted {
		if err := e.countRows(); err != nil {
			return err
		}
	}
	sh, L := e.sh, len(e.model.Layers)
	hidden := e.hiddenWidth()
	size := e.sharedSizes()
	first := 0 // the first layer computed from shared rows
	if sh.x.csr != nil {
		// Sparse rows stay sparse, as one process multiplies them: the
		// first layer fetches its rows as before, over whole
		// neighbourhoods.
		first = 1
	}
	if !e.shared.holds {
		// The group's buffers are taken once (every worker checks alike).
		if err := e.sharedRoom(size); err != nil {
			return err
		}
	}
	bufs := [2][]float32{}
	for i := range bufs {
		var err error
		if bufs[i], err = e.share(d, i, size[i]); err != nil {
			return err
		}
	}
	defer e.unshare(d, size[0]+size[1])
	if first == 0 {
		w := sh.x.cols()
		for i, v := range sh.owned {
			sh.x.copyRow(bufs[1][int(v)*w:(int(v)+1)*w], i)
		}
		if err := e.exchanged(d, sh.x.valueBytes()*w); err != nil {
			return err
		}
	} else {
		if _, err := e.wholeLayer(0, sh.x); err != nil {
			return err
		}
		if L > 1 {
			if len(sh.owned) > 0 && e.cur.Cols != hidden {
				return fmt.Errorf("dataparallel: layer 0 gives %d columns; evaluation expects %d", e.cur.Cols, hidden)
			}
			e.putOwn(bufs[0], &e.cur, hidden)
			if err := e.exchanged(d, 4*hidden); err != nil {
				return err
			}
		}
	}
	for l := first; l < L; l++ {
		src, w := bufs[(l+1)%2], hidden
		if l == 0 {
			w = sh.x.cols()
		}
		if err := e.sliceLayer(l, src, w, bufs[l%2]); err != nil {
			return err
		}
		if l < L-1 {
			if err := e.exchanged(d, 4*hidden); err != nil {
				return err
			}
		}
	}
	return nil
}

// sharedSizes is the bytes of the group's two buffers: buffer 1 holds
// the features (unless sparse) and the odd layers' outputs, buffer 0 the
// even layers'.
func (e *evaluator) sharedSizes() [2]int {
	var size [2]int
	n, hidden := e.sh.n, e.hiddenWidth()
	for l := range len(e.model.Layers) - 1 {
		size[l%2] = 4 * n * hidden
	}
	if e.sh.x.csr == nil {
		size[1] = max(size[1], 4*n*e.sh.x.cols())
	}
	return size
}

// sharedRoom is roomForEvaluation of the group's buffers of size bytes.
func (e *evaluator) sharedRoom(size [2]int) error {
	n := max(e.sh.n, 1)
	return roomForEvaluation(int64(size[0]+size[1]), fmt.Sprintf("the rows of two layers' inputs, %d and %d float32s, for each of the graph's %d nodes, held once by the workers of this process", size[0]/(4*n), size[1]/(4*n), e.sh.n),
		"one process's exact evaluation (without --parts) holds as much; without --parts, --eval-sampler evaluates on sampled batches instead")
}

// putOwn writes the rows of y, one per owned node, into buf at their
// nodes' rows, width w.
func (e *evaluator) putOwn(buf []float32, y *tensor.Matrix, w int) {
	for i, v := range e.sh.owned {
		copy(buf[int(v)*w:(int(v)+1)*w], y.Data[i*w:(i+1)*w])
	}
}

// sliceLayer computes layer l of the owned nodes, a slice at a time, from
// src (a row of width w per node of the graph): into out at the nodes'
// rows, or, for the last layer, into e.cur.
func (e *evaluator) sliceLayer(l int, src []float32, w int, out []float32) error {
	sh, s := e.sh, &e.shared
	last := l == len(e.model.Layers)-1
	if last {
		e.cur.Rows, e.cur.Data = 0, e.cur.Data[:0]
		e.cur.Cols = e.model.Config.Classes
	}
	chunk := s.chunkNodes
	for lo := 0; lo < len(sh.owned); lo += chunk {
		dst := sh.owned[lo:min(lo+chunk, len(sh.owned))]
		if err := e.whole.Draw(0, 0, dst, &s.drawn); err != nil {
			return err
		}
		b := &s.block
		if err := e.whole.SetLayer(b, 0, dst, &s.drawn); err != nil {
			return err
		}
		b.FinishSeeds(dst)
		in := &s.in
		was := cap(in.Data)
		in.Rows, in.Cols, in.Data = len(b.Input), w, growTo(in.Data, len(b.Input)*w)
		memacct.Grown(memacct.Activations, was, cap(in.Data), 4)
		for i, v := range b.Input {
			copy(in.Data[i*w:(i+1)*w], src[int(v)*w:(int(v)+1)*w])
		}
		y := e.model.ForwardLayer(l, b.Blocks[0], nn.DenseFeatures(in))
		if last {
			if y.Cols != e.cur.Cols {
				return fmt.Errorf("dataparallel: the last layer gives %d columns for %d classes", y.Cols, e.cur.Cols)
			}
			e.cur.Data = append(e.cur.Data, y.Data...)
			e.cur.Rows += y.Rows
			continue
		}
		wo := e.model.OutputWidth(l)
		if y.Cols != wo {
			return fmt.Errorf("dataparallel: layer %d gives %d columns; evaluation expects %d", l, y.Cols, wo)
		}
		if e.bf16 {
			for i, v := range y.Data {
				y.Data[i] = bf16.ToFloat32(bf16.FromFloat32(v))
			}
		}
		for i, v := range dst {
			copy(out[int(v)*wo:(int(v)+1)*wo], y.Data[i*wo:(i+1)*wo])
		}
	}
	return nil
}
