package fullgraph

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

// Data is what one worker trains on. Rows are the destinations of Block:
// Features has one row per destination, Labels one entry per destination
// (negative for a node without a label), and Train, Val and Test list
// destination rows.
type Data struct {
	Block            *nn.Block
	Features         nn.Features
	Labels           []int32
	Train, Val, Test []int32
}

// Stepper is the full-graph train.Stepper: every optimiser step is one
// forward pass over all of the worker's rows, with the halo exchange (if
// any) inside the layers.
type Stepper struct {
	data   Data
	model  *nn.Model
	blocks []*nn.Block
	ex     *halo.Exchange

	// loss is the training and the evaluation passes' loss. Training writes
	// the gradient over the logits where the model allows
	// (nn.Model.OutputFree), and evaluation's validation loss keeps rows of
	// the validation nodes only (nn.CrossEntropy.Loss).
	loss       nn.CrossEntropy
	trainCount float64 // training rows over all workers: the loss normaliser

	codecTensors []checkpoint.Tensor // from State, for StateTensors
	restoring    *streamingState     // from Restore, for RestoreTensors
}

// NewStepper builds cfg's model for data and checks that data is
// consistent. ex is this worker's halo exchange when the graph is split
// (nil otherwise): the stepper tells it which pass comes next, so that
// training passes are compressed at the step's ratio, and checks it for
// errors after every pass. With a Reducer the workers agree on the number
// of training rows, so every worker must call NewStepper.
func NewStepper(cfg train.Config, data Data, ex *halo.Exchange) (*Stepper, error) {
	if err := data.check(cfg.Model.Classes); err != nil {
		return nil, err
	}
	model, err := train.NewModel(cfg, data.Features.Cols())
	if err != nil {
		return nil, err
	}
	count := []float64{float64(len(data.Train))}
	if cfg.Reducer != nil {
		if err := cfg.Reducer.SumFloat64(count); err != nil {
			return nil, fmt.Errorf("fullgraph: counting training rows: %w", err)
		}
	}
	if count[0] == 0 {
		return nil, errors.New("fullgraph: no training nodes")
	}
	return &Stepper{data: data, model: model, blocks: []*nn.Block{data.Block}, ex: ex, trainCount: count[0]}, nil
}

// check reports the first inconsistency of d for classes classes.
func (d *Data) check(classes int) error {
	if d.Block == nil {
		return errors.New("fullgraph: no graph")
	}
	if d.Features.Dense == nil && d.Features.Sparse == nil && d.Features.BF16 == nil {
		return errors.New("fullgraph: no features")
	}
	n := d.Block.NumDst
	if d.Features.Rows() != n || len(d.Labels) != n {
		return fmt.Errorf("fullgraph: %d feature rows and %d labels for %d nodes", d.Features.Rows(), len(d.Labels), n)
	}
	for _, set := range []struct {
		name string
		rows []int32
	}{{"training", d.Train}, {"validation", d.Val}, {"test", d.Test}} {
		for _, r := range set.rows {
			if r < 0 || int(r) >= n {
				return fmt.Errorf("fullgraph: %s row %d outside [0, %d)", set.name, r, n)
			}
			if y := d.Labels[r]; y < 0 || int(y) >= classes {
				return fmt.Errorf("fullgraph: %s row %d has label %d outside [0, %d)", set.name, r, y, classes)
			}
		}
	}
	return nil
}

// New returns the run loop of a full-graph trainer of data with cfg: a
// Stepper driven by a train.Loop.
func New(cfg train.Config, data Data, ex *halo.Exchange) (*train.Loop, error) {
	s, err := NewStepper(cfg, data, ex)
	if err != nil {
		return nil, err
	}
	return train.New(cfg, s)
}

func (s *Stepper) Model() *nn.Model { return s.model }

// rebind makes the stepper train on data through ex from its next pass
// on: another partition of the same graph, so the model and the number of
// training rows over all workers stay as they are.
func (s *Stepper) rebind(data Data, ex *halo.Exchange) error {
	if err := data.check(s.model.Config.Classes); err != nil {
		return err
	}
	if s.ex != nil && s.ex != ex {
		ex.TakeOver(s.ex) // closes the old exchange; ex reuses its shared buffers
	}
	if old := s.data.Block; old != nil && old != data.Block {
		old.Release()
	}
	s.data, s.blocks, s.ex = data, []*nn.Block{data.Block}, ex
	return nil
}

// Batches is 1: an epoch is one pass over the whole graph.
func (s *Stepper) Batches() int { return 1 }

// Step is one forward and backward pass over the worker's rows, its loss
// normalised by the training rows of all workers (times the micro-batches
// accumulated, each one the whole graph again).
func (s *Stepper) Step(b train.Batch) (float64, error) {
	d := &s.data
	if s.ex != nil {
		s.ex.Begin(b.Step, true)
	}
	logits := s.model.Forward(s.blocks, d.Features, true)
	norm := s.trainCount * float64(max(b.Micros, 1))
	var loss float64
	var err error
	if s.model.OutputFree() {
		loss, err = s.loss.ForwardInPlace(logits, d.Labels, d.Train, norm) // a row of the classes' width a node less
	} else {
		loss, logits, err = s.loss.Forward(logits, d.Labels, d.Train, norm)
	}
	if err != nil {
		return 0, err
	}
	s.model.Backward(logits)
	if s.ex != nil && s.ex.Err() != nil {
		return 0, s.ex.Err()
	}
	return loss, nil
}

// Evaluate runs the model without dropout over the worker's rows.
func (s *Stepper) Evaluate(step int) (train.Evaluation, error) {
	d := &s.data
	if s.ex != nil {
		s.ex.Begin(step, false)
	}
	logits := s.model.Forward(s.blocks, d.Features, false)
	if s.ex != nil && s.ex.Err() != nil {
		return train.Evaluation{}, s.ex.Err()
	}
	e := train.Evaluation{
		TrainCorrect: float64(nn.Correct(logits, d.Labels, d.Train)), TrainCount: float64(len(d.Train)),
		ValCorrect: float64(nn.Correct(logits, d.Labels, d.Val)), ValCount: float64(len(d.Val)),
		TestCorrect: float64(nn.Correct(logits, d.Labels, d.Test)), TestCount: float64(len(d.Test)),
		Assessment: train.Assess(logits, d.Labels, d.Val, d.Test),
	}
	if len(d.Val) > 0 {
		// Normalised by 1 so that the workers' sums add up; Loss keeps no
		// buffer of the logits' size, as training's ForwardInPlace does not.
		loss, err := s.loss.Loss(logits, d.Labels, d.Val, 1)
		if err != nil {
			return train.Evaluation{}, err
		}
		e.ValLossSum = loss
	}
	return e, nil
}

// State is the compression schedule's, when it has one to keep; with a
// streaming codec (delta) it also records that the checkpoint keeps every
// worker's codec state, which StateTensors returns. Gathering that state on
// rank 0 is a collective: every worker calls State at the same point (the
// run saves checkpoints on every rank then, and ranks other than 0 drop
// them).
func (s *Stepper) State() (json.RawMessage, error) {
	if s.ex == nil {
		return nil, nil
	}
	sched, err := s.ex.ScheduleState()
	if err != nil || !s.ex.Streaming() {
		return sched, err
	}
	states, err := s.ex.CodecStates()
	if err != nil {
		return nil, err
	}
	st := streamingState{Schedule: sched, Workers: len(states)}
	s.codecTensors = s.codecTensors[:0]
	for r, b := range states {
		st.Bytes = append(st.Bytes, len(b))
		s.codecTensors = append(s.codecTensors, codecTensor(r, b))
	}
	return json.Marshal(st)
}

// streamingState is a stepper's state with a streaming codec: the
// schedule's (if any), and the byte length of each worker's codec state,
// kept in the tensor codecTensorName(rank).
type streamingState struct {
	Schedule json.RawMessage `json:"schedule,omitempty"`
	Workers  int             `json:"codec_workers"`
	Bytes    []int           `json:"codec_bytes"`
}

func codecTensorName(rank int) string { return fmt.Sprintf("codec/rank%d", rank) }

// codecTensor holds state's bytes as float32 bit patterns (zero-padded to
// whole values), which a checkpoint stores exactly.
func codecTensor(rank int, state []byte) checkpoint.Tensor {
	return bytesTensor(codecTensorName(rank), state)
}

// bytesTensor holds b as float32 bit patterns, zero-padded to whole values.
func bytesTensor(name string, b []byte) checkpoint.Tensor {
	data := make([]float32, (len(b)+3)/4)
	copy(compress.FloatBytes(data), b)
	return checkpoint.Tensor{Name: name, Shape: []int{len(data)}, Data: data}
}

// StateTensors is every worker's codec state (on rank 0) after State.
func (s *Stepper) StateTensors() ([]checkpoint.Tensor, error) {
	t := s.codecTensors
	s.codecTensors = nil
	return t, nil
}

func (s *Stepper) Restore(state json.RawMessage) error {
	s.restoring = nil
	if s.ex == nil {
		if state != nil {
			return errors.New("fullgraph: the checkpoint has a compression schedule's state, but this run has no halo exchange")
		}
		return nil
	}
	var st streamingState
	keeps := state != nil && json.Unmarshal(state, &st) == nil && st.Workers > 0
	switch {
	case !s.ex.Streaming() && keeps:
		return errors.New("fullgraph: the checkpoint keeps a streaming codec's state (delta), but this run's codec keeps none")
	case !s.ex.Streaming():
		return s.ex.RestoreSchedule(state)
	case !keeps || len(st.Bytes) != st.Workers:
		return errors.New("fullgraph: the checkpoint lacks the state of this run's streaming codec (delta): it was made with another codec")
	}
	if err := s.ex.RestoreSchedule(st.Schedule); err != nil {
		return err
	}
	s.restoring = &st
	return nil
}

// RestoreTensors continues the codec from the state Restore announced.
func (s *Stepper) RestoreTensors(tensor func(name string) *checkpoint.Tensor) error {
	st := s.restoring
	s.restoring = nil
	if st == nil {
		return nil
	}
	states := make([][]byte, st.Workers)
	for r := range states {
		t := tensor(codecTensorName(r))
		if t == nil || st.Bytes[r] < 0 || 4*len(t.Data) < st.Bytes[r] {
			return fmt.Errorf("fullgraph: the checkpoint lacks worker %d's codec state", r)
		}
		states[r] = compress.FloatBytes(t.Data)[:st.Bytes[r]]
	}
	return s.ex.RestoreCodec(states)
}
