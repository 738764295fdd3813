package dataparallel

import (
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

// evaluator runs exact layer-wise inference over a worker's own nodes:
// layer l's output of every owned node from its whole neighbourhood's
// outputs of layer l−1, the neighbours' rows fetched from their owners.
// Over a transport between processes it holds one layer's outputs of its
// own nodes and their neighbours' (evaluateFetched); in the in-process
// group the workers share each layer's rows instead (evaluateShared).
type evaluator struct {
	sh      *share
	model   *nn.Model
	batcher *batcher
	whole   *sample.PartNeighbor
	block   sample.Batch
	built   bool
	cur     tensor.Matrix
	rows    [3][]int32 // local rows of the training, validation and test nodes
	loss    nn.CrossEntropy
	// bf16 rounds the hidden layers' outputs to bfloat16, as one
	// process's evaluation at bf16 stores them.
	bf16 bool
	// shared is the state of evaluation over the in-process group's
	// shared rows (evaluateShared); fetchAll makes an in-process group
	// fetch the rows as other transports do (tests).
	shared   sharedEval
	fetchAll bool
	chunk    int // destinations a slice of evaluateShared, if set (tests)
	// wholeRows is the input rows of the owned nodes' whole
	// neighbourhoods, wholeLayer's block: the part's local columns.
	wholeRows int
}

func newEvaluator(sh *share, whole *sample.PartNeighbor, m *nn.Model, sp *partstore.Part) *evaluator {
	return &evaluator{sh: sh, model: m, batcher: newBatcher(sh), whole: whole, wholeRows: sp.Part.Local.Cols,
		rows: [3][]int32{slices.Clone(sp.Train), slices.Clone(sp.Val), slices.Clone(sp.Test)}}
}

// checkRoom refuses an evaluation that would take more memory than is
// available now, as evaluate refuses it before taking the memory: called
// before training, so that a run that cannot evaluate says so before its
// first epoch rather than after it.
func (e *evaluator) checkRoom() error {
	if _, ok := comm.DirectOf(e.sh.c); ok && !e.fetchAll {
		if err := e.sharedRoom(e.sharedSizes()); err != nil || e.sh.x.csr == nil {
			return err
		}
		// Sparse features: the first layer fetches its rows (evaluateShared).
	}
	return e.fetchedRoom(e.wholeRows)
}

// evaluate returns this worker's sums of the metrics; every worker calls
// it together.
func (e *evaluator) evaluate() (train.Evaluation, error) {
	var err error
	if d, ok := comm.DirectOf(e.sh.c); ok && !e.fetchAll {
		err = e.evaluateShared(d)
	} else {
		err = e.evaluateFetched()
	}
	if err != nil {
		return train.Evaluation{}, err
	}
	if len(e.sh.owned) == 0 {
		// No rows, but the classes' sums every worker adds up.
		e.cur.Rows, e.cur.Cols, e.cur.Data = 0, e.model.Config.Classes, e.cur.Data[:0]
	}
	logits, labels := &e.cur, e.sh.labels
	ev := train.Evaluation{
		TrainCorrect: float64(nn.Correct(logits, labels, e.rows[0])), TrainCount: float64(len(e.rows[0])),
		ValCorrect: float64(nn.Correct(logits, labels, e.rows[1])), ValCount: float64(len(e.rows[1])),
		TestCorrect: float64(nn.Correct(logits, labels, e.rows[2])), TestCount: float64(len(e.rows[2])),
		Assessment: train.Assess(logits, labels, e.rows[1], e.rows[2]),
	}
	if len(e.rows[1]) > 0 {
		// Normalised by 1 so that the workers' sums add up.
		loss, err := e.loss.Loss(logits, labels, e.rows[1], 1)
		if err != nil {
			return train.Evaluation{}, err
		}
		ev.ValLossSum = loss
	}
	return ev, nil
}

// evaluateFetched computes the last layer's outputs of the worker's nodes
// into e.cur, each layer over the owned nodes' whole neighbourhoods at
// once, their rows fetched from their owners.
func (e *evaluator) evaluateFetched() error {
	x := e.sh.x
	for l := range e.model.Layers {
		var err error
		if x, err = e.wholeLayer(l, x); err != nil {
			return err
		}
	}
	return nil
}

// wholeLayer computes layer l of the owned nodes into e.cur from x (the
// layer's input, a row per owned node), over their whole neighbourhoods,
// the other parts' rows fetched from their owners, and returns e.cur as
// the next layer's input.
func (e *evaluator) wholeLayer(l int, x rowStore) (rowStore, error) {
	if !e.built {
		// One block serves every layer: the owned nodes and their whole
		// neighbourhoods.
		var r sample.Rows
		if err := e.whole.Draw(0, 0, e.sh.owned, &r); err != nil {
			return x, err
		}
		if err := e.whole.SetLayer(&e.block, 0, e.sh.owned, &r); err != nil {
			return x, err
		}
		e.block.FinishSeeds(e.sh.owned)
		e.built = true
		if err := e.fetchedRoom(len(e.block.Input)); err != nil {
			return x, err
		}
	}
	if err := e.batcher.split(e.block.Input); err != nil {
		return x, err
	}
	in, err := e.batcher.fetch(EvalSite, x, e.block.Input)
	if err != nil {
		return x, err
	}
	if len(e.sh.owned) == 0 {
		// No rows to compute, but the layers above exchange dense
		// rows on every worker, whatever the input's storage.
		return rowStore{f32: &e.cur}, nil
	}
	y := e.model.ForwardLayer(l, e.block.Blocks[0], in)
	e.cur.Rows, e.cur.Cols = y.Rows, y.Cols
	e.cur.Data = append(e.cur.Data[:0], y.Data...)
	if e.bf16 && l < len(e.model.Layers)-1 {
		for i, v := range e.cur.Data {
			e.cur.Data[i] = bf16.ToFloat32(bf16.FromFloat32(v))
		}
	}
	return rowStore{f32: &e.cur}, nil
}

// fetchedRoom is roomForEvaluation of what wholeLayer holds at the widest
// layer: the whole neighbourhood's rows gathered and those received, and
// the owned nodes' outputs.
func (e *evaluator) fetchedRoom(rows int) error {
	own, w := len(e.sh.owned), max(e.sh.x.cols(), e.hiddenWidth())
	need := 4 * int64(w) * int64(2*rows-own+2*own)
	return roomForEvaluation(need, fmt.Sprintf("rank %d's %d nodes' whole neighbourhood of %d rows, %d values each, gathered and received", e.sh.rank, own, rows, w),
		"workers in one process (--parts without graft launch) share evaluation's rows instead")
}
