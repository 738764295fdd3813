package minibatch

import (
	"slices"

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
// run (4.9 GB on a graph of ogbn-products' size), while allocating them
// again costs a second against minutes of evaluation.

type evaluator struct {
	model *nn.Model
	p     train.Problem
	hoods *sample.Neighborhoods
	batch sample.Batch
	in    gatherer
	cur   [2]tensor.Matrix // the outputs of the last two layers, ping-pong

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

func newEvaluator(m *nn.Model, p train.Problem, hoods *sample.Neighborhoods) *evaluator {
	e := &evaluator{model: m, p: p, hoods: hoods, nodes: make([]int32, p.Graph.N), keepBytes: keepBytes}
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
	x := e.p.Features
	L := len(e.model.Layers)
	var logits *tensor.Matrix
	for l := range L {
		nodes := e.nodes
		if l == L-1 {
			nodes = e.labelled
		}
		out, err := e.layer(l, x, nodes, &e.cur[l%2])
		if err != nil {
			return train.Evaluation{}, err
		}
		x, logits = nn.DenseFeatures(out), out
	}
	ev := train.Evaluation{
		TrainCorrect: float64(nn.Correct(logits, e.labels, e.rows[0])), TrainCount: float64(len(e.rows[0])),
		ValCorrect: float64(nn.Correct(logits, e.labels, e.rows[1])), ValCount: float64(len(e.rows[1])),
		TestCorrect: float64(nn.Correct(logits, e.labels, e.rows[2])), TestCount: float64(len(e.rows[2])),
		Assessment: train.Assess(logits, e.labels, e.rows[1], e.rows[2]),
	}
	if len(e.rows[1]) > 0 {
		loss, _, err := e.loss.Forward(logits, e.labels, e.rows[1], 1)
		if err != nil {
			return train.Evaluation{}, err
		}
		ev.ValLossSum = loss
	}
	if 4*(cap(e.cur[0].Data)+cap(e.cur[1].Data)) > e.keepBytes {
		e.cur, e.in, e.loss = [2]tensor.Matrix{}, gatherer{}, nn.CrossEntropy{}
	}
	return ev, nil
}

// layer computes layer l's output for nodes from x (every node's input to
// the layer) into out, a row per node of nodes.
func (e *evaluator) layer(l int, x nn.Features, nodes []int32, out *tensor.Matrix) (*tensor.Matrix, error) {
	avgDegree := float64(e.p.Graph.NumEdges())/float64(max(e.p.Graph.N, 1)) + 1
	chunk := int(chunkBytes / (4 * float64(x.Cols()) * avgDegree))
	chunk = min(max(chunk, 256), len(nodes))
	for lo := 0; lo < len(nodes); lo += chunk {
		dst := nodes[lo:min(lo+chunk, len(nodes))]
		if err := e.hoods.Block(dst, &e.batch); err != nil {
			return nil, err
		}
		y := e.model.ForwardLayer(l, e.batch.Blocks[0], e.in.gather(x, e.batch.Input))
		if lo == 0 {
			out.Rows, out.Cols = len(nodes), y.Cols
			out.Data = resize(out.Data, len(nodes)*y.Cols)
		}
		copy(out.Data[lo*y.Cols:], y.Data)
	}
	return out, nil
}
