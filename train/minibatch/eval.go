package minibatch

import (
	"slices"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

// evaluator runs layer-wise inference: each layer's output for every node
// (the last layer's for the labelled nodes only), a slice of destinations
// at a time over their whole neighbourhoods, before the next layer. It
// holds two layers' outputs for every node, and one slice's gathered
// inputs, while it evaluates. Above keepBytes it lets them go afterwards:
// kept, they would stay beside the training's buffers for the rest of the
// run (3.4 GB for 3 SAGE layers of width 256 on a graph of
// ogbn-products' size), while allocating them again costs a second
// against minutes of evaluation. At bf16 precision
// the hidden layers' outputs are stored in bfloat16, half the bytes, and
// widened as each slice gathers them; the last layer's (the labelled
// nodes' logits, which the metrics read) stay float32.

type evaluator struct {
	model *nn.Model
	p     train.Problem
	hoods *sample.Neighborhoods
	batch sample.Batch
	in    gatherer
	cur   [2]tensor.Matrix // the outputs of the last two layers, ping-pong
	// bf16 stores the hidden layers' outputs in cur16 instead of cur.
	bf16  bool
	cur16 [2]tensor.MatrixBF16
	// proj holds, for models whose last layer aggregates projections of
	// its input narrower than the input (nn.Model.LastProjections), those
	// projections of every node instead of the layer before's output.
	proj    [2]tensor.Matrix
	projTmp [2]*tensor.Matrix
	own     gatherer // the destinations' own projection, gathered
	// unprojected evaluates the last layer from its input (tests).
	unprojected bool

	nodes    []int32 // every node, in order
	labelled []int32 // the nodes of the split, ascending: the last layer's rows
	labels   []int32 // their labels
	rows     [3][]int32
	loss     nn.CrossEntropy
	// keepBytes is the size of the outputs kept between evaluations.
	keepBytes int
}

// keepBytes is evaluator.keepBytes' default: small graphs keep their
// outputs, so that an epoch of them allocates nothing.
const keepBytes = 256 << 20

func newEvaluator(m *nn.Model, p train.Problem, hoods *sample.Neighborhoods, bf16 bool) *evaluator {
	e := &evaluator{model: m, p: p, hoods: hoods, nodes: make([]int32, p.Graph.N), keepBytes: keepBytes, bf16: bf16}
	for v := range e.nodes {
		e.nodes[v] = int32(v)
	}
	e.labelled = slices.Concat(p.Train, p.Val, p.Test)
	slices.Sort(e.labelled)
	e.labelled = slices.Compact(e.labelled)
	for _, v := range e.labelled {
		e.labels = append(e.labels, p.Labels[v])
	}
	for i, set := range [][]int32{p.Train, p.Val, p.Test} {
		for _, v := range set {
			r, _ := slices.BinarySearch(e.labelled, v)
			e.rows[i] = append(e.rows[i], int32(r))
		}
	}
	return e
}

// chunkBytes bounds the gathered inputs of one slice of destinations.
const chunkBytes = 64 << 20

// evaluate returns the sums of the model's metrics over the split.
func (e *evaluator) evaluate() (train.Evaluation, error) {
	x := inputOf(e.p)
	L := len(e.model.Layers)
	var logits *tensor.Matrix
	projections := 0
	if !e.bf16 && !e.unprojected { // bf16 stores the hidden layers' outputs rounded, and the last layer reads them so
		projections = e.model.LastProjections()
	}
	for l := range L {
		nodes := e.nodes
		if l == L-1 {
			nodes = e.labelled
		}
		var out output = (*outputF32)(&e.cur[l%2])
		switch {
		case e.bf16 && l < L-1:
			out = (*outputBF16)(&e.cur16[l%2])
		case projections > 0 && l == L-2:
			out = &projectedOutput{e: e, n: projections}
		}
		var err error
		if projections > 0 && l == L-1 {
			err = e.lastFromProjections(nodes, out, projections)
		} else {
			err = e.layer(l, x, nodes, out)
		}
		if err != nil {
			return train.Evaluation{}, err
		}
		x = out.input()
		logits = &e.cur[l%2]
	}
	ev := train.Evaluation{
		TrainCorrect: float64(nn.Correct(logits, e.labels, e.rows[0])), TrainCount: float64(len(e.rows[0])),
		ValCorrect: float64(nn.Correct(logits, e.labels, e.rows[1])), ValCount: float64(len(e.rows[1])),
		TestCorrect: float64(nn.Correct(logits, e.labels, e.rows[2])), TestCount: float64(len(e.rows[2])),
		Assessment: train.Assess(logits, e.labels, e.rows[1], e.rows[2]),
	}
	if len(e.rows[1]) > 0 {
		loss, err := e.loss.Loss(logits, e.labels, e.rows[1], 1)
		if err != nil {
			return train.Evaluation{}, err
		}
		ev.ValLossSum = loss
	}
	if held := e.outputBytes(); held > e.keepBytes {
		memacct.Add(memacct.Activations, -int64(held))
		e.cur, e.cur16, e.in = [2]tensor.Matrix{}, [2]tensor.MatrixBF16{}, gatherer{} // the loss keeps its buffers: validation rows wide
		e.proj, e.projTmp, e.own = [2]tensor.Matrix{}, [2]*tensor.Matrix{}, gatherer{}
	}
	return ev, nil
}

// heldEstimate is what evaluate holds once it has run (outputBytes),
// reckoned before it runs from the layers' output widths: as evaluate
// stores them, a hidden layer's output for every node (bfloat16 at bf16
// precision), the last layer's for the labelled nodes only, in two
// buffers taken in turn, each as large as the largest it held; and where
// the last layer aggregates projections of its input, those projections
// of every node (classes wide) in place of the layer before's output.
func (e *evaluator) heldEstimate() int {
	cfg := e.model.Config.WithDefaults()
	L := cfg.Layers
	projections := 0
	if !e.bf16 && !e.unprojected && len(e.model.Layers) == L {
		projections = e.model.LastProjections()
	}
	var f32, b16 [2]int // values of each buffer
	proj := 0
	for l := range L {
		rows, buf := e.p.Graph.N, &f32
		switch {
		case l == L-1:
			rows = len(e.labelled)
		case projections > 0 && l == L-2:
			proj = projections * rows * cfg.Classes
			continue
		case e.bf16:
			buf = &b16
		}
		buf[l%2] = max(buf[l%2], rows*e.model.OutputWidth(l))
	}
	return 4*(f32[0]+f32[1]+proj) + 2*(b16[0]+b16[1])
}

// outputBytes is the size of the outputs held.
func (e *evaluator) outputBytes() int {
	return 4*(cap(e.cur[0].Data)+cap(e.cur[1].Data)+cap(e.proj[0].Data)+cap(e.proj[1].Data)) + 2*(cap(e.cur16[0].Data)+cap(e.cur16[1].Data))
}

// output is where a layer's rows go: a float32 or a bfloat16 matrix.
type output interface {
	// size makes it rows×cols; put stores y as its rows from lo on.
	size(rows, cols int)
	put(lo int, y *tensor.Matrix)
	input() input // the next layer's input
}

type outputF32 tensor.Matrix

// resizeExactly is resize without room to spare: an evaluation's outputs
// have the same size every time, and on a large graph a quarter more of
// two layers' outputs is gigabytes.
func resizeExactly[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (o *outputF32) size(rows, cols int) {
	was := cap(o.Data)
	o.Rows, o.Cols, o.Data = rows, cols, resizeExactly(o.Data, rows*cols)
	memacct.Grown(memacct.Activations, was, cap(o.Data), 4)
}
func (o *outputF32) put(lo int, y *tensor.Matrix) { copy(o.Data[lo*y.Cols:], y.Data) }
func (o *outputF32) input() input                 { return input{x: nn.DenseFeatures((*tensor.Matrix)(o))} }

type outputBF16 tensor.MatrixBF16

func (o *outputBF16) size(rows, cols int) {
	was := cap(o.Data)
	o.Rows, o.Cols, o.Data = rows, cols, resizeExactly(o.Data, rows*cols)
	memacct.Grown(memacct.Activations, was, cap(o.Data), 2)
}
func (o *outputBF16) put(lo int, y *tensor.Matrix) { bf16.Encode(o.Data[lo*y.Cols:], y.Data) }
func (o *outputBF16) input() input                 { return input{x16: (*tensor.MatrixBF16)(o)} }

// layer computes layer l's output for nodes from x (every node's input to
// the layer) into out, a row per node of nodes.
func (e *evaluator) layer(l int, x input, nodes []int32, out output) error {
	return e.slices(nodes, x.cols(), out, func() *tensor.Matrix {
		return e.model.ForwardLayer(l, e.batch.Blocks[0], x.gather(&e.in, e.batch.Input))
	})
}

// lastFromProjections computes the last layer's output for nodes from the
// projections of its input that the layer before it stored.
func (e *evaluator) lastFromProjections(nodes []int32, out output, projections int) error {
	return e.slices(nodes, e.proj[0].Cols, out, func() *tensor.Matrix {
		b := e.batch.Blocks[0]
		src := e.in.gather(nn.DenseFeatures(&e.proj[0]), e.batch.Input).Dense
		var own *tensor.Matrix
		if projections == 2 { // a block's sources start with its destinations
			own = e.own.gather(nn.DenseFeatures(&e.proj[1]), e.batch.Input[:b.NumDst]).Dense
		}
		return e.model.ForwardLastProjected(b, src, own)
	})
}

// slices runs forward on the block of each slice of nodes over their whole
// neighbourhoods, cols values a source, and stores its rows in out.
func (e *evaluator) slices(nodes []int32, cols int, out output, forward func() *tensor.Matrix) error {
	avgDegree := float64(e.p.Graph.NumEdges())/float64(max(e.p.Graph.N, 1)) + 1
	chunk := int(chunkBytes / (4 * float64(cols) * avgDegree))
	chunk = min(max(chunk, 256), len(nodes))
	for lo := 0; lo < len(nodes); lo += chunk {
		dst := nodes[lo:min(lo+chunk, len(nodes))]
		if err := e.hoods.Block(dst, &e.batch); err != nil {
			return err
		}
		y := forward()
		if lo == 0 {
			out.size(len(nodes), y.Cols)
		}
		out.put(lo, y)
	}
	return nil
}

// projectedOutput keeps, of the layer before the last, the last layer's
// projections of its output (nn.Model.ProjectForLast), classes wide,
// instead of the hidden-wide output itself.
type projectedOutput struct {
	e *evaluator
	n int // the projections
}

func (o *projectedOutput) size(rows, _ int) {
	classes := o.e.model.Config.Classes
	for i := range o.n {
		p := &o.e.proj[i]
		was := cap(p.Data)
		p.Rows, p.Cols, p.Data = rows, classes, resizeExactly(p.Data, rows*classes)
		memacct.Grown(memacct.Activations, was, cap(p.Data), 4)
	}
}

func (o *projectedOutput) put(lo int, y *tensor.Matrix) {
	tmp := o.e.projTmp[:o.n]
	for i := range tmp {
		if tmp[i] == nil {
			tmp[i] = &tensor.Matrix{}
		}
		t := tmp[i]
		t.Rows, t.Cols, t.Data = y.Rows, o.e.proj[i].Cols, resize(t.Data, y.Rows*o.e.proj[i].Cols)
	}
	o.e.model.ProjectForLast(y, tmp)
	for i, t := range tmp {
		copy(o.e.proj[i].Data[lo*t.Cols:], t.Data)
	}
}

func (o *projectedOutput) input() input { return input{} } // the last layer reads the projections
