package minibatch

import (
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
)

// sampledEvaluator estimates the metrics on batches of the labelled nodes
// drawn by a seed-driven sampler (--eval-sampler), holding one batch at a
// time instead of every node's hidden layers. Every evaluation draws the
// same batches (epoch 1 of the sampler's order), so that model selection
// compares epochs on one sample.
type sampledEvaluator struct {
	model   *nn.Model
	x       input
	labels  []int32 // every node's
	sampler sample.Sampler
	set     []uint8 // per node: the sets it belongs to (inTrain|inVal|inTest)
	counted []int32 // per node: the evaluation's loss rows that were it

	batch     sample.Batch
	in        gatherer
	loss      nn.CrossEntropy
	outLabels []int32
	rows      [3][]int32
	labelled  int // the split's nodes
	splitRows int // and its rows, a node counted once per set it is in
}

const (
	inTrain = 1 << iota
	inVal
	inTest
)

// newSampledEvaluator returns the evaluator that draws batches of the
// split's nodes with spec.
func newSampledEvaluator(m *nn.Model, p train.Problem, spec string, batchSize, layers int, agg sample.Aggregation, seed uint64) (*sampledEvaluator, error) {
	e := &sampledEvaluator{model: m, x: inputOf(p), labels: p.Labels, set: make([]uint8, p.Graph.N)}
	var labelled []int32
	for i, nodes := range [][]int32{p.Train, p.Val, p.Test} {
		for _, v := range nodes {
			if e.set[v] == 0 {
				labelled = append(labelled, v)
			}
			e.set[v] |= 1 << i
		}
	}
	slices.Sort(labelled)
	e.labelled = len(labelled)
	e.splitRows = len(p.Train) + len(p.Val) + len(p.Test)
	s, err := sample.New(spec, sample.Config{Graph: p.Graph, Train: labelled, BatchSize: batchSize, Layers: layers, Aggregation: agg, Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("evaluation sampler: %w", err)
	}
	e.sampler = s
	return e, nil
}

// evaluate returns the sums of the model's metrics over the batches. A
// sampler that does not draw every labelled node once (GraphSAINT's and
// Cluster-GCN's subgraphs) is an error: its sums would not be the split's.
func (e *sampledEvaluator) evaluate() (train.Evaluation, error) {
	var ev train.Evaluation
	if e.counted == nil {
		e.counted = make([]int32, len(e.set))
	}
	clear(e.counted)
	seen := 0
	for i := range e.sampler.Batches() {
		if err := e.sampler.Sample(1, i, &e.batch); err != nil {
			return ev, err
		}
		b := &e.batch
		logits := e.model.Forward(b.Blocks, e.x.gather(&e.in, b.Input), false)
		e.outLabels = e.outLabels[:0]
		for _, v := range b.Output {
			e.outLabels = append(e.outLabels, e.labels[v])
		}
		for k := range e.rows {
			e.rows[k] = e.rows[k][:0]
		}
		for _, r := range b.Loss {
			v := b.Output[r]
			if e.counted[v]++; e.counted[v] == 1 {
				seen++
			}
			for k := range e.rows {
				if e.set[v]&(1<<k) != 0 {
					e.rows[k] = append(e.rows[k], r)
				}
			}
		}
		ev.TrainCorrect += float64(nn.Correct(logits, e.outLabels, e.rows[0]))
		ev.ValCorrect += float64(nn.Correct(logits, e.outLabels, e.rows[1]))
		ev.TestCorrect += float64(nn.Correct(logits, e.outLabels, e.rows[2]))
		ev.TrainCount += float64(len(e.rows[0]))
		ev.ValCount += float64(len(e.rows[1]))
		ev.TestCount += float64(len(e.rows[2]))
		if len(e.rows[1]) > 0 {
			loss, _, err := e.loss.Forward(logits, e.outLabels, e.rows[1], 1)
			if err != nil {
				return ev, err
			}
			ev.ValLossSum += loss
		}
	}
	if seen != e.labelled || int(ev.TrainCount+ev.ValCount+ev.TestCount) != e.splitRows {
		return ev, fmt.Errorf("minibatch: the evaluation sampler drew %d of the split's %d nodes, some more than once; evaluate with a seed-driven sampler (neighbor, fastgcn, ladies)", seen, e.labelled)
	}
	return ev, nil
}
