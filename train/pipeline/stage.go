package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
)

// stage is one stage's train.Stepper: the first micro-batch of an
// optimiser step runs the schedule for all of the step's micro-batches;
// each micro-batch then hands the loop its gradients and loss, so that the
// loop accumulates them as it does one process's.
type stage struct {
	train.Stateless
	c       comm.Communicator
	mb      *minibatch.Stepper
	cuts    []int // stage s holds layers [cuts[s], cuts[s+1])
	s, last int   // this stage, and the last one
	classes int
	timeout time.Duration

	// replicas[m] runs micro-batch m: replicas[0] is mb's model, the
	// others share its parameter values, each with buffers and gradients
	// of its own.
	replicas []*nn.Model
	losses   []float64        // of the step's micro-batches
	in       []*tensor.Matrix // per micro-batch: the input received
	dlogits  []*tensor.Matrix // per micro-batch: the last stage's logit gradients
	grad     tensor.Matrix    // a gradient received
	buf      []byte

	figures Figures // since the reporter last took them
}

// Figures are one stage's counters: the time its layers computed (forward,
// backward and loss), the time it waited for another stage's activations
// or gradients, and the bytes of the activations and gradients it sent.
type Figures struct {
	ComputeSeconds, WaitSeconds    float64
	ActivationBytes, GradientBytes int64
}

func (st *stage) Model() *nn.Model { return st.replicas[0] }
func (st *stage) Batches() int     { return st.mb.Batches() }

// Trained returns the parameters of the stage's layers: the loop steps
// and keeps those alone.
func (st *stage) Trained() []*nn.Param { return st.layerParams(st.replicas[0], st.s) }

// layerParams returns model's parameters of stage s's layers.
func (st *stage) layerParams(model *nn.Model, s int) []*nn.Param {
	var ps []*nn.Param
	for l := st.cuts[s]; l < st.cuts[s+1]; l++ {
		ps = append(ps, model.LayerParams(l)...)
	}
	return ps
}

// replica returns the model that runs micro-batch m, building it the
// first time: a model of its own whose parameters are replicas[0]'s.
func (st *stage) replica(m int) (*nn.Model, error) {
	for len(st.replicas) <= m {
		r, err := nn.NewModel(st.replicas[0].Config)
		if err != nil {
			return nil, err
		}
		r.SetProducts(st.replicas[0].Products())
		mine, shared := r.Params(), st.replicas[0].Params()
		for i, p := range mine {
			p.Value = shared[i].Value
		}
		st.replicas = append(st.replicas, r)
	}
	return st.replicas[m], nil
}

// Step runs micro-batch b: the whole schedule of its optimiser step when
// it is the step's first, and then hands the loop its gradients (the
// replica's) and its loss.
func (st *stage) Step(b train.Batch) (float64, error) {
	if b.Micro == 0 {
		if err := st.run(b); err != nil {
			return 0, err
		}
	}
	if b.Micro >= len(st.losses) {
		return 0, fmt.Errorf("pipeline: micro-batch %d of a step of %d", b.Micro, len(st.losses))
	}
	if b.Micro > 0 {
		mine := st.Trained()
		for i, p := range st.layerParams(st.replicas[b.Micro], st.s) {
			copy(mine[i].Grad.Data, p.Grad.Data)
		}
	}
	return st.losses[b.Micro], nil
}

// run runs the schedule of the optimiser step starting at b: every
// micro-batch's forward pass in order, then their backward passes, last
// first.
func (st *stage) run(b train.Batch) error {
	micros, err := st.mb.Micros(b)
	if err != nil {
		return err
	}
	n := len(micros)
	st.losses = append(st.losses[:0], make([]float64, n)...)
	for len(st.in) < n {
		st.in, st.dlogits = append(st.in, &tensor.Matrix{}), append(st.dlogits, &tensor.Matrix{})
	}
	base, computed := st.replicas[0].Step(), st.figures.ComputeSeconds
	lo, hi := st.cuts[st.s], st.cuts[st.s+1]
	for m, mb := range micros {
		r, err := st.replica(m)
		if err != nil {
			return err
		}
		id := header{epoch: b.Epoch, index: b.Index + m}
		x := mb.X
		if st.s > 0 {
			if _, err := st.receive(ActivationSite, st.s-1, id, st.in[m]); err != nil {
				return err
			}
			x = nn.DenseFeatures(st.in[m])
		}
		start := time.Now()
		r.SetStep(base + uint64(m))
		out := r.ForwardRange(lo, hi, mb.Blocks, x, true)
		if st.s == st.last {
			loss, d, err := st.mb.Loss(m, out)
			if err != nil {
				return err
			}
			st.losses[m] = loss
			copyMatrix(st.dlogits[m], d)
		}
		st.figures.ComputeSeconds += time.Since(start).Seconds()
		if st.s < st.last {
			if err := st.send(ActivationSite, st.s+1, id, out); err != nil {
				return err
			}
		}
	}
	for m := n - 1; m >= 0; m-- {
		id := header{epoch: b.Epoch, index: b.Index + m}
		d := st.dlogits[m]
		if st.s < st.last {
			h, err := st.receive(GradientSite, st.s+1, id, &st.grad)
			if err != nil {
				return err
			}
			st.losses[m], d = h.loss, &st.grad
		}
		start := time.Now()
		dx := st.replicas[m].BackwardRange(lo, hi, d)
		st.figures.ComputeSeconds += time.Since(start).Seconds()
		if st.s > 0 {
			id.loss = st.losses[m]
			if err := st.send(GradientSite, st.s-1, id, dx); err != nil {
				return err
			}
		}
	}
	st.replicas[0].SetStep(base + uint64(n))
	st.mb.Done(b, st.figures.ComputeSeconds-computed)
	return nil
}

// send sends stage to the matrix m of micro-batch h at site.
func (st *stage) send(site string, to int, h header, m *tensor.Matrix) error {
	st.buf = h.encode(st.buf[:0], m)
	if err := st.c.Send(site, to, st.buf); err != nil {
		return fmt.Errorf("pipeline: stage %d: sending %s to stage %d: %w", st.s, what(site), to, err)
	}
	if site == ActivationSite {
		st.figures.ActivationBytes += int64(len(st.buf))
	} else {
		st.figures.GradientBytes += int64(len(st.buf))
	}
	return nil
}

// receive takes the matrix of micro-batch want that stage from sent at
// site into m, within the timeout.
func (st *stage) receive(site string, from int, want header, m *tensor.Matrix) (header, error) {
	start := time.Now()
	_, msg, err := st.c.Recv(site, from, start.Add(st.timeout))
	st.figures.WaitSeconds += time.Since(start).Seconds()
	if errors.Is(err, comm.ErrDeadline) {
		return header{}, fmt.Errorf("pipeline: stage %d: stage %d sent no %s within %v (dead or stalled)", st.s, from, what(site), st.timeout)
	}
	if err != nil {
		return header{}, fmt.Errorf("pipeline: stage %d: waiting for stage %d's %s: %w", st.s, from, what(site), err)
	}
	h, err := decode(msg, m)
	if err != nil {
		return header{}, fmt.Errorf("pipeline: stage %d: from stage %d: %w", st.s, from, err)
	}
	if h.epoch != want.epoch || h.index != want.index {
		return header{}, fmt.Errorf("pipeline: stage %d: stage %d sent %s of batch %d of epoch %d for batch %d of epoch %d", st.s, from, what(site), h.index, h.epoch, want.index, want.epoch)
	}
	return h, nil
}

func what(site string) string {
	switch site {
	case ActivationSite:
		return "activations"
	case GradientSite:
		return "gradients"
	}
	return "parameters"
}

// copyMatrix sets dst to a copy of src, reusing dst's storage.
func copyMatrix(dst, src *tensor.Matrix) {
	dst.Rows, dst.Cols = src.Rows, src.Cols
	dst.Data = append(dst.Data[:0], src.Data...)
}

// Evaluate sends the stage's parameters to the first stage, which
// evaluates the whole model; the other stages' sums are zero (with the
// first stage's shape), so that the loop's sum over the stages is the
// first stage's evaluation.
func (st *stage) Evaluate(step int) (train.Evaluation, error) {
	if st.s > 0 {
		if err := st.sendParams(); err != nil {
			return train.Evaluation{}, err
		}
		var zero train.Evaluation
		if st.mb.Assessed() {
			zero.Assessment.Classes = make([]float64, 6*st.classes)
		}
		return zero, nil
	}
	if err := st.gatherParams(); err != nil {
		return train.Evaluation{}, err
	}
	return st.mb.Evaluate(step)
}

// sendParams sends the values of the stage's parameters to the first stage.
func (st *stage) sendParams() error {
	st.buf = st.buf[:0]
	for _, p := range st.Trained() {
		st.buf = compress.AppendFloats(st.buf, p.Value.Data)
	}
	if err := st.c.Send(ParamSite, 0, st.buf); err != nil {
		return fmt.Errorf("pipeline: stage %d: sending its parameters to stage 0: %w", st.s, err)
	}
	return nil
}

// gatherParams receives every other stage's parameters into the first
// stage's model.
func (st *stage) gatherParams() error {
	model := st.replicas[0]
	for s := 1; s <= st.last; s++ {
		start := time.Now()
		_, msg, err := st.c.Recv(ParamSite, s, start.Add(st.timeout))
		if errors.Is(err, comm.ErrDeadline) {
			return fmt.Errorf("pipeline: stage 0: stage %d sent no parameters within %v (dead or stalled)", s, st.timeout)
		}
		if err != nil {
			return fmt.Errorf("pipeline: stage 0: waiting for stage %d's parameters: %w", s, err)
		}
		params, off := st.layerParams(model, s), 0
		for _, p := range params {
			off += len(p.Value.Data)
		}
		if 4*off != len(msg) {
			return fmt.Errorf("pipeline: stage 0: stage %d sent %d bytes of parameters, want %d", s, len(msg), 4*off)
		}
		off = 0
		for _, p := range params {
			n := len(p.Value.Data)
			compress.ReadFloats(p.Value.Data[:0], msg[4*off:4*(off+n)])
			off += n
		}
	}
	return nil
}

// reducer sums the stages' metrics (only the first stage's are not zero)
// and agrees on stopping, as a data-parallel run's workers do; gradients
// it leaves alone: each stage's are its own layers'.
type reducer struct{ train.CommReducer }

func (r *reducer) SumFloat32([]float32) error { return nil }
