package fullgraph

import (
	"fmt"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// Exchange is one worker's halo exchange, the nn.Halo of partition-parallel
// training. Forward sends every peer the owned rows it reads, compressed at
// the ratio the schedule gives for the current step, and receives the halo
// rows; Backward returns the halo rows' gradients to their owners through
// the same compressor, so the exchange is one differentiable operation.
//
// Evaluation passes and the last layer's exchange are never compressed:
// the VARCO authors leave the last layer's input whole, and accuracy is
// measured on the model, not on a compressed view of it.
//
// nn.Halo methods cannot return errors, so a failed exchange is sticky:
// Err reports it and the trainer checks it after each pass.
type Exchange struct {
	comm  comm.Communicator
	part  *partition.Part
	codec compress.Compressor
	sched compress.Schedule
	seed  uint64
	// layers below compressedLayers are compressed (while training).
	compressedLayers int

	step       int
	training   bool
	trainRatio float64 // the schedule's ratio at the last training pass
	err        error

	send, recv [][]byte
	rows       []float32 // gathered or decoded rows

	codecSeconds float64 // time spent packing, compressing and unpacking
	sites        []siteNames
}

type siteNames struct{ fwd, bwd, eval string }

// NewExchange returns the exchange of the worker that owns part, for a
// model of layers layers. A nil codec means no compression.
func NewExchange(c comm.Communicator, part *partition.Part, codec compress.Compressor, sched compress.Schedule, seed uint64, layers int) (*Exchange, error) {
	if c.Size() != len(part.Send) {
		return nil, fmt.Errorf("fullgraph: %d workers for a %d-part layout", c.Size(), len(part.Send))
	}
	if c.Rank() != part.ID {
		return nil, fmt.Errorf("fullgraph: rank %d holds part %d", c.Rank(), part.ID)
	}
	if codec == nil {
		codec, _ = compress.New("none")
	}
	if sched == nil {
		sched = compress.Fixed(1)
	}
	e := &Exchange{comm: c, part: part, codec: codec, sched: sched, seed: seed,
		compressedLayers: layers - 1,
		send:             make([][]byte, c.Size()), recv: make([][]byte, c.Size())}
	for l := range layers {
		e.sites = append(e.sites, siteNames{
			fwd: fmt.Sprintf("halo.fwd.%d", l), bwd: fmt.Sprintf("halo.bwd.%d", l), eval: fmt.Sprintf("halo.eval.%d", l)})
	}
	return e, nil
}

// Begin tells the exchange which pass comes next: the training step t
// (0-based, the schedule's clock) or an evaluation pass.
func (e *Exchange) Begin(step int, training bool) {
	e.step, e.training = step, training
	if training {
		e.trainRatio = max(e.sched.Ratio(step), 1)
	}
}

// Observe reports the training loss of the current step to an adaptive
// schedule.
func (e *Exchange) Observe(loss float64) {
	if o, ok := e.sched.(compress.Observer); ok {
		o.Observe(e.step, loss)
	}
}

// scheduleState is the state an adaptive schedule must carry across a
// checkpoint (nil for schedules that are functions of the step alone).
func (e *Exchange) scheduleState() *compress.PlateauState {
	if p, ok := e.sched.(*compress.Plateau); ok {
		st := p.State()
		return &st
	}
	return nil
}

func (e *Exchange) restoreSchedule(st *compress.PlateauState) error {
	p, ok := e.sched.(*compress.Plateau)
	switch {
	case ok && st != nil:
		p.Restore(*st)
	case ok != (st != nil):
		return fmt.Errorf("fullgraph: the checkpoint was made with a different compression schedule than %s", e.sched)
	}
	return nil
}

// Err returns the first error of any exchange so far.
func (e *Exchange) Err() error { return e.err }

// Ratio is the compression ratio layer's exchange uses in the current pass.
func (e *Exchange) Ratio(layer int) float64 {
	if !e.training || layer >= e.compressedLayers {
		return 1
	}
	return max(e.sched.Ratio(e.step), 1)
}

// TrainingRatio is the ratio the schedule gave the last training step.
func (e *Exchange) TrainingRatio() float64 { return e.trainRatio }

func (e *Exchange) key(layer, from, to int, backward bool) compress.Key {
	return compress.Key{Seed: e.seed, Step: e.step, Layer: layer, From: from, To: to, Backward: backward}
}

func (e *Exchange) scratch(n int) []float32 {
	if cap(e.rows) < n {
		e.rows = make([]float32, n)
	}
	return e.rows[:n]
}

func (e *Exchange) site(layer int, backward bool) string {
	s := e.sites[min(layer, len(e.sites)-1)]
	switch {
	case !e.training:
		return s.eval
	case backward:
		return s.bwd
	}
	return s.fwd
}

// Forward writes h followed by the received halo rows into ext.
func (e *Exchange) Forward(layer int, h, ext *tensor.Matrix) {
	w, own, me := h.Cols, h.Rows, e.comm.Rank()
	copy(ext.Data[:own*w], h.Data)
	if e.err != nil {
		return
	}
	ratio := e.Ratio(layer)
	start := time.Now()
	for q, rows := range e.part.Send {
		if q == me {
			e.send[q] = e.send[q][:0]
			continue
		}
		buf := e.scratch(len(rows) * w)
		for i, r := range rows {
			copy(buf[i*w:(i+1)*w], h.Data[int(r)*w:(int(r)+1)*w])
		}
		e.send[q] = e.codec.Encode(e.send[q][:0], buf, len(rows), w, ratio, e.key(layer, me, q, false))
	}
	e.codecSeconds += time.Since(start).Seconds()
	if err := e.comm.AllToAll(e.site(layer, false), e.send, e.recv); err != nil {
		e.fail(fmt.Errorf("halo exchange, layer %d: %w", layer, err))
		return
	}
	start = time.Now()
	defer func() { e.codecSeconds += time.Since(start).Seconds() }()
	for q := range e.part.Send {
		if q == me {
			continue
		}
		lo, hi := own+e.part.HaloStart[q], own+e.part.HaloStart[q+1]
		err := e.codec.Decode(ext.Data[lo*w:hi*w], hi-lo, w, ratio, e.key(layer, q, me, false), e.recv[q])
		if err != nil {
			e.fail(fmt.Errorf("halo rows from rank %d, layer %d: %w", q, layer, err))
			return
		}
	}
}

// Backward sends the halo rows' gradients to their owners and writes into
// dh the owned rows' gradient plus what the peers returned.
func (e *Exchange) Backward(layer int, dext, dh *tensor.Matrix) {
	w, own, me := dh.Cols, dh.Rows, e.comm.Rank()
	copy(dh.Data, dext.Data[:own*w])
	if e.err != nil {
		return
	}
	ratio := e.Ratio(layer)
	start := time.Now()
	for q := range e.part.Send {
		if q == me {
			e.send[q] = e.send[q][:0]
			continue
		}
		lo, hi := own+e.part.HaloStart[q], own+e.part.HaloStart[q+1]
		// The forward message went q → me; its gradient answers it.
		e.send[q] = e.codec.Encode(e.send[q][:0], dext.Data[lo*w:hi*w], hi-lo, w, ratio, e.key(layer, q, me, true))
	}
	e.codecSeconds += time.Since(start).Seconds()
	if err := e.comm.AllToAll(e.site(layer, true), e.send, e.recv); err != nil {
		e.fail(fmt.Errorf("halo gradient exchange, layer %d: %w", layer, err))
		return
	}
	start = time.Now()
	defer func() { e.codecSeconds += time.Since(start).Seconds() }()
	for q, rows := range e.part.Send {
		if q == me {
			continue
		}
		buf := e.scratch(len(rows) * w)
		if err := e.codec.Decode(buf, len(rows), w, ratio, e.key(layer, me, q, true), e.recv[q]); err != nil {
			e.fail(fmt.Errorf("halo gradients from rank %d, layer %d: %w", q, layer, err))
			return
		}
		for i, r := range rows {
			dst := dh.Data[int(r)*w : (int(r)+1)*w]
			for j, v := range buf[i*w : (i+1)*w] {
				dst[j] += v
			}
		}
	}
}

func (e *Exchange) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
