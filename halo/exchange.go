package halo

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// Config is what an exchange compresses with.
type Config struct {
	// Codec compresses the training passes of every layer but the last; nil
	// means none. It belongs to this exchange (a compressor keeps scratch
	// space).
	Codec compress.Compressor
	// Schedule gives the ratio of each training step; nil means 1. It
	// belongs to this exchange (an adaptive schedule keeps state).
	Schedule compress.Schedule
	// Seed keys the codecs' random choices, with the message's step,
	// layer, sender and receiver.
	Seed uint64
	// Layers is the model's number of layers: the last layer's exchange is
	// not compressed unless CompressLast is set.
	Layers int
	// CompressLast compresses the last layer's exchange too, as the
	// others (the VARCO authors leave it whole; with it whole, the last
	// layer's classes-wide rows are a floor under the halo bytes).
	CompressLast bool
	// BF16 sends the forward passes' rows in bfloat16 where they would go
	// as they are (mixed precision: the layers round them to bf16 for
	// every node, nn.Model.SetBF16, so nothing is lost): half the bytes.
	// A codec compresses the rows of the passes it compresses as before,
	// widened to float32, except the lossless entropy:none, which codes
	// their bf16 values (entropy:bf16); the backward passes' gradients,
	// partial sums of a reduction, stay float32. A codec that keeps state
	// per stream is told (compress.Streaming's SetBF16): delta coding then
	// keeps its reconstructions in bf16, the gradients' too, so the
	// gradient rows it decodes are bf16 values.
	BF16 bool
	// EvalCodec, if set, compresses the evaluation passes of every layer,
	// the last included: a codec without state per stream or columns kept
	// for a backward pass (a quantiser, say), at ratio 1. nil sends them
	// whole. On slow links an evaluation after every epoch can cost more
	// than the compressed training step; a trainer that selects its model
	// by such evaluations re-evaluates the kept model exactly
	// (Exchange.EvaluateExactly).
	EvalCodec compress.Compressor
}

// Exchange is one worker's halo exchange, the nn.Halo of partition-parallel
// training. Evaluation passes are compressed only with Config.EvalCodec,
// and the last layer's training exchange only with Config.CompressLast:
// the VARCO authors leave the last layer's input whole, and accuracy is
// measured on the model, not on a compressed view of it.
//
// nn.Halo methods cannot return errors, so a failed exchange is sticky: Err
// reports it, and the trainer checks it after each pass.
type Exchange struct {
	comm comm.Communicator
	plan *plan
	cfg  Config

	codec  *timed  // the codec of compressed passes, timed
	keeper *keeper // codec's column keeper, if it sends gradients at columns (else nil)
	caps   compress.Caps
	none   *timed // the codec of uncompressed passes where rows cannot go as they are
	eval   *timed // Config.EvalCodec, or nil
	exact  bool   // evaluation passes go whole whatever Config.EvalCodec says
	bf16   *timed // with Config.BF16, the codec of float32 rows that would go as they are
	// bf16Coded, with Config.BF16 and the lossless codec entropy:none,
	// stands in for it in forward passes: entropy:bf16 codes the rows'
	// two bytes a value (exact, the layers rounded them) rather than
	// their float32 widening.
	bf16Coded *timed
	raw       bool              // uncompressed passes send float32s as they are (wire-order host)
	rows      comm.RowsExchange // with shared rows: sends each peer its rows of the one encoding
	// direct, for the in-process group, lets the uncompressed passes
	// read the peers' rows where they lie: no message buffers (nil
	// elsewhere).
	direct comm.Direct
	holder comm.Holder // the exchange's hold of direct's shared buffers

	observer compress.Observer // the schedule, if it watches the loss
	stateful compress.Stateful // the schedule, if it has state to checkpoint

	step       int
	training   bool
	trainRatio float64 // the schedule's ratio at the last training pass
	err        error

	send, recv [][]byte
	scratch    []float32 // gathered or decoded rows, or a piece of the halo gradient
	encoded    []byte    // the boundary rows' one encoding (shared rows)
	peerRows   [][]float32
	out, in    [][]byte // uncompressed messages, views of peerRows or of the rows
	// gradDH and gradLayer are the matrix the in-process backwardRaw's
	// visitor, addTo, adds the peers' gradients into, and its layer.
	gradDH    *tensor.Matrix
	gradLayer int
	addTo     func(q int, msg []byte)
	// gradFill is the layer's fill in the in-process backwardPull, and
	// pullRows its message sizes, in rows.
	gradFill func(lo, hi int, out *tensor.Matrix)
	pullRows []int

	part                  *partition.Part
	shared                *shared // the shared passes' placement and views (shared.go)
	sentBytes, recvdBytes []int
}

// New returns the exchange of the worker that owns part.
func New(c comm.Communicator, part *partition.Part, cfg Config) (*Exchange, error) {
	if c.Size() != len(part.Send) {
		return nil, fmt.Errorf("halo: %d workers for a %d-part layout", c.Size(), len(part.Send))
	}
	if c.Rank() != part.ID {
		return nil, fmt.Errorf("halo: rank %d holds part %d", c.Rank(), part.ID)
	}
	cfg.Layers = max(cfg.Layers, 1)
	none, _ := compress.New("none")
	if cfg.Codec == nil {
		cfg.Codec = none
	}
	if cfg.Schedule == nil {
		cfg.Schedule = compress.Fixed(1)
	}
	n := c.Size()
	e := &Exchange{comm: c, plan: newPlan(part, cfg.Layers), cfg: cfg, caps: cfg.Codec.Caps(),
		none: &timed{Compressor: none}, raw: compress.HostIsWireOrder,
		send: make([][]byte, n), recv: make([][]byte, n), peerRows: make([][]float32, n), out: make([][]byte, n), in: make([][]byte, n)}
	if d, ok := comm.DirectOf(c); ok {
		e.direct, e.holder = d, comm.NewHolder()
	}
	e.addTo = e.addGradientsFrom
	e.pullRows = make([]int, n)
	e.part, e.sentBytes, e.recvdBytes = part, make([]int, n), make([]int, n)
	if c := cfg.EvalCodec; c != nil {
		if caps := c.Caps(); caps.Streaming != nil || caps.Grad != nil {
			return nil, fmt.Errorf("halo: %s keeps state between messages and cannot compress evaluation passes; a quantiser can (quant8, entropy:quant8)", c.Name())
		}
		e.eval = &timed{Compressor: c}
	}
	if cfg.BF16 {
		c, err := compress.New("bf16")
		if err != nil {
			return nil, err
		}
		e.bf16 = &timed{Compressor: c}
	}
	if e.caps.Streaming != nil {
		// At bf16 the forward rows are rounded to bf16 as they are stored,
		// so a streaming codec may keep its state in bf16 (delta coding's
		// reconstructions: half the memory).
		e.caps.Streaming.SetBF16(cfg.BF16)
	}
	e.observer, _ = cfg.Schedule.(compress.Observer)
	e.stateful, _ = cfg.Schedule.(compress.Stateful)
	codec := cfg.Codec
	if e.caps.Grad != nil {
		e.keeper = newKeeper(codec, e.plan, e.compressedLayers())
		codec = e.keeper
	}
	e.codec = &timed{Compressor: codec}
	if cfg.BF16 && codec.Name() == "entropy:none" {
		c, err := compress.New("entropy:bf16")
		if err != nil {
			return nil, err
		}
		e.bf16Coded = &timed{Compressor: c}
	}
	if e.caps.Rows != nil {
		e.plan.shareRows()
		e.rows = comm.Rows(c)
	}
	return e, nil
}

// Begin tells the exchange which pass comes next: the training step t
// (0-based, the schedule's clock) or an evaluation pass.
func (e *Exchange) Begin(step int, training bool) {
	e.step, e.training = step, training
	if training {
		e.trainRatio = max(e.cfg.Schedule.Ratio(step), 1)
	}
}

// Observe reports the loss an adaptive schedule watches (the trainer's
// validation loss after each epoch) to the schedule, if it watches one.
func (e *Exchange) Observe(loss float64) {
	if e.observer != nil {
		e.observer.Observe(e.step, loss)
	}
}

// ScheduleState is the state a checkpoint must keep of the schedule, nil
// for schedules that are functions of the step alone.
func (e *Exchange) ScheduleState() (json.RawMessage, error) {
	if e.stateful == nil {
		return nil, nil
	}
	return e.stateful.State()
}

// RestoreSchedule continues the schedule from a checkpoint's state.
func (e *Exchange) RestoreSchedule(state json.RawMessage) error {
	switch {
	case e.stateful != nil && state != nil:
		return e.stateful.Restore(state)
	case (e.stateful != nil) != (state != nil):
		return fmt.Errorf("halo: the checkpoint was made with a different compression schedule than %s", e.cfg.Schedule)
	}
	return nil
}

// EvaluateExactly sends the evaluation passes that follow whole (on) or
// through Config.EvalCodec again (off).
func (e *Exchange) EvaluateExactly(on bool) { e.exact = on }

// EvalCompressed reports whether evaluation passes go through a codec
// that changes their rows (Config.EvalCodec, unless EvaluateExactly is on
// or the codec is lossless, as entropy:none is).
func (e *Exchange) EvalCompressed() bool {
	return e.eval != nil && !e.exact && !e.eval.Caps().Lossless
}

// Streaming reports whether the codec keeps state per stream of messages
// (compress.Caps.Streaming), which a checkpoint must keep.
func (e *Exchange) Streaming() bool { return e.caps.Streaming != nil }

// CodecStates gathers every worker's codec state on rank 0, indexed by
// rank; the other workers get nil. It is a collective: every worker calls
// it at the same point of training. nil when the codec keeps no state.
func (e *Exchange) CodecStates() ([][]byte, error) {
	if e.caps.Streaming == nil {
		return nil, nil
	}
	mine, err := e.caps.Streaming.StreamState()
	if err != nil {
		return nil, err
	}
	n := e.comm.Size()
	send, recv := make([][]byte, n), make([][]byte, n)
	send[0] = mine
	if err := e.comm.AllToAll(codecStateSite, send, recv); err != nil {
		return nil, fmt.Errorf("halo: gathering the codec's state: %w", err)
	}
	if e.comm.Rank() != 0 {
		return nil, nil
	}
	return recv, nil
}

// codecStateSite is the communicator site of CodecStates.
const codecStateSite = "halo.codec-state"

// RestoreCodec continues the codec from states, CodecStates' result on
// rank 0: this worker takes its rank's.
func (e *Exchange) RestoreCodec(states [][]byte) error {
	switch {
	case e.caps.Streaming == nil && states == nil:
		return nil
	case e.caps.Streaming == nil:
		return fmt.Errorf("halo: the checkpoint keeps a codec's state, but %s keeps none", e.cfg.Codec.Name())
	case len(states) != e.comm.Size():
		return fmt.Errorf("halo: the checkpoint keeps the codec state of %d workers, not %d", len(states), e.comm.Size())
	}
	return e.caps.Streaming.RestoreStreams(states[e.comm.Rank()])
}

// Err returns the first error of any exchange so far.
func (e *Exchange) Err() error { return e.err }

// CodecSeconds is the time spent in the codecs (Config.Codec and
// Config.EvalCodec) so far: encoding, decoding and, for a codec that sends
// gradients at columns, keeping them. Passes without one spend none, however their rows go: as
// they are, through none on a host whose float32s are not in wire order,
// or rounded to bf16 (Config.BF16's float32 rows), which is the layers'
// rounding, not a codec's.
func (e *Exchange) CodecSeconds() float64 {
	var s float64
	if e.eval != nil {
		s = e.eval.seconds
	}
	if e.cfg.Codec.Name() == "none" {
		return s
	}
	if e.bf16Coded != nil {
		s += e.bf16Coded.seconds
	}
	return s + e.codec.seconds
}

// Ratio is the compression ratio layer's exchange uses in the current pass.
func (e *Exchange) Ratio(layer int) float64 {
	if !e.compressing(layer) {
		return 1
	}
	return max(e.cfg.Schedule.Ratio(e.step), 1)
}

// TrainingRatio is the ratio the schedule gave the last training step.
func (e *Exchange) TrainingRatio() float64 { return e.trainRatio }

// AtFloor reports whether the last training step ran at the schedule's
// floor, the ratio it keeps from then on (compress.Floor).
func (e *Exchange) AtFloor() bool { return compress.AtFloor(e.cfg.Schedule, e.trainRatio) }

// compressing reports whether layer's exchange in the current pass goes
// through the codec: training passes below the last layer.
func (e *Exchange) compressing(layer int) bool {
	return e.training && layer < e.compressedLayers()
}

// compressedLayers is the number of layers whose training exchanges go
// through the codec: all but the last, or all with CompressLast.
func (e *Exchange) compressedLayers() int {
	if e.cfg.CompressLast {
		return e.cfg.Layers
	}
	return e.cfg.Layers - 1
}

// uncompressed reports whether layer's exchange in the current pass sends
// rows as they are, without a codec. The codec none at ratio 1 does too.
func (e *Exchange) uncompressed(layer int) bool {
	return e.raw && !e.evalCoded() && (!e.compressing(layer) || e.cfg.Codec.Name() == "none")
}

// evalCoded reports whether the current pass is an evaluation that goes
// through Config.EvalCodec.
func (e *Exchange) evalCoded() bool { return !e.training && e.eval != nil && !e.exact }

// codecFor is the codec of layer's exchange in the current pass, when it
// is not uncompressed. Passes that are not compressed use none rather than
// the codec at ratio 1, because quantisers and bf16 ignore the ratio.
func (e *Exchange) codecFor(layer int) *timed {
	switch {
	case e.compressing(layer):
		return e.codec
	case e.evalCoded():
		return e.eval
	}
	return e.none
}

// forwardCodec is codecFor in a forward pass: with Config.BF16 the bf16
// codec stands in for none, and entropy:bf16 for entropy:none.
func (e *Exchange) forwardCodec(layer int) *timed {
	c := e.codecFor(layer)
	switch {
	case e.bf16 != nil && (c == e.none || c.Name() == "none"):
		return e.bf16
	case e.bf16Coded != nil && c == e.codec:
		return e.bf16Coded
	}
	return c
}

// keeps reports whether layer's exchange in the current pass keeps its
// forward messages' columns for the backward pass.
func (e *Exchange) keeps(layer int) bool { return e.keeper != nil && e.compressing(layer) }

// shares reports whether layer's forward pass encodes every boundary row
// once for all the peers that read it.
func (e *Exchange) shares(layer int) bool { return e.rows != nil && e.compressing(layer) }

func (e *Exchange) key(layer, from, to int, backward bool) compress.Key {
	return compress.Key{Seed: e.cfg.Seed, Step: e.step, Layer: layer, From: from, To: to, Backward: backward}
}

func (e *Exchange) site(layer int, backward bool) string {
	s := e.plan.sites[min(layer, len(e.plan.sites)-1)]
	switch {
	case !e.training:
		return s.eval
	case backward:
		return s.bwd
	}
	return s.fwd
}

func (e *Exchange) buffer(n int) []float32 {
	if cap(e.scratch) < n {
		was := cap(e.scratch)
		e.scratch = make([]float32, n)
		memacct.Grown(memacct.Communication, was, n, 4)
	}
	return e.scratch[:n]
}

func (e *Exchange) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// ErrStale reports a backward pass of a codec that sends gradients at its
// forward columns without the forward pass of the same step.
var ErrStale = errors.New("no forward exchange in this step")
