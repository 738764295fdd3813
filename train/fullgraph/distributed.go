package fullgraph

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
)

// DistOptions are the communication settings of a partition-parallel run.
type DistOptions struct {
	// Codec and Schedule make each worker's compressor of the halo
	// exchange and its ratio schedule (each worker needs its own: both
	// keep state); nil means no compression and ratio 1.
	Codec    func() compress.Compressor
	Schedule func() compress.Schedule
	Link     *comm.Link // emulated network link, or nil

	// Resume continues from a checkpoint instead of a fresh start.
	Resume *checkpoint.State
	// SaveCheckpoint, if set, is called on rank 0 with the run's state every
	// CheckpointEvery epochs (when positive) and after an interrupted epoch.
	SaveCheckpoint  func(*checkpoint.State) error
	CheckpointEvery int
}

// Problem is the global training problem: the graph, node features and
// labels, and the split in global node ids.
type Problem struct {
	Graph            *graph.Graph
	Features         nn.Features
	Labels           []int32
	Train, Val, Test []int32
}

// DistMetrics are one epoch's results with its communication, over all
// workers. Bytes count what the workers sent during the training step's
// halo exchanges (forward activations, backward gradients) and gradient
// all-reduce; evaluation passes are not compressed and are not counted.
type DistMetrics struct {
	Metrics
	Ratio               float64   `json:"ratio"`
	BytesFwd            int64     `json:"bytes_fwd"`
	BytesBwd            int64     `json:"bytes_bwd"`
	BytesGrad           int64     `json:"bytes_grad"`
	ComputeSeconds      float64   `json:"compute_seconds"`       // slowest worker's epoch time outside communication
	CommSeconds         float64   `json:"comm_seconds"`          // slowest worker's measured time in communication
	EmulatedCommSeconds float64   `json:"emulated_comm_seconds"` // slowest worker's communication on the emulated link
	EmulatedSeconds     float64   `json:"emulated_seconds"`      // the epoch on the emulated link: max over workers of compute + emulated communication
	CodecSeconds        float64   `json:"codec_seconds"`         // slowest worker's time compressing and decompressing
	WorkerCompute       []float64 `json:"worker_compute_seconds"`
}

// workerCounters are one worker's cumulative figures, exchanged each epoch.
type workerCounters struct {
	bytesFwd, bytesBwd, bytesGrad      float64
	commSeconds, emulated, codec, wall float64
}

const counterFields = 7

func (w workerCounters) slice() [counterFields]float64 {
	return [counterFields]float64{w.bytesFwd, w.bytesBwd, w.bytesGrad, w.commSeconds, w.emulated, w.codec, w.wall}
}

// epochSite is the per-epoch exchange of counters; it is excluded from the
// communication it reports.
const epochSite = "metrics.epoch"

func counters(ex *halo.Exchange, stats *comm.Stats, wall float64) workerCounters {
	var w workerCounters
	for _, site := range stats.Sites() {
		st := stats.Site(site)
		switch {
		case site == epochSite:
			continue
		case strings.HasPrefix(site, halo.ForwardSites):
			w.bytesFwd += float64(st.BytesSent)
		case strings.HasPrefix(site, halo.BackwardSites):
			w.bytesBwd += float64(st.BytesSent)
		case site == GradientSite:
			w.bytesGrad += float64(st.BytesSent)
		}
		w.commSeconds += st.Seconds
		w.emulated += st.EmulatedSeconds
	}
	if ex != nil {
		w.codec = ex.CodecSeconds()
	}
	w.wall = wall
	return w
}

// RunWorker trains the part of layout that c's rank owns, with the other
// ranks of c doing the same, and calls onEpoch (on every rank) with the
// epoch's metrics over all workers. Parameters stay identical on every
// rank, so any rank's model is the result.
func RunWorker(ctx context.Context, c comm.Communicator, cfg Config, p Problem, layout *partition.Layout, opts DistOptions, onEpoch func(DistMetrics) error) (Result, *Trainer, error) {
	if opts.Link != nil {
		c = comm.WithLink(c, *opts.Link)
	}
	var d Data
	var ex *halo.Exchange
	if layout == nil || layout.K == 1 {
		// One worker holds the whole graph: no halo, no exchange.
		if c.Size() != 1 {
			return Result{}, nil, fmt.Errorf("fullgraph: %d workers but no partition layout", c.Size())
		}
		d = Data{Graph: nn.WholeGraph(p.Graph), Features: p.Features, Labels: p.Labels, Train: p.Train, Val: p.Val, Test: p.Test}
	} else {
		if layout.K != c.Size() {
			return Result{}, nil, fmt.Errorf("fullgraph: a %d-part layout needs %d workers, not %d", layout.K, layout.K, c.Size())
		}
		part := &layout.Parts[c.Rank()]
		var err error
		if ex, err = newExchange(c, part, cfg, opts); err != nil {
			return Result{}, nil, err
		}
		if d, err = PartOf(p.Graph, p.Features, p.Labels, p.Train, p.Val, p.Test, part, ex); err != nil {
			return Result{}, nil, err
		}
		cfg.Reducer = &CommReducer{Comm: c}
		cfg.Exchange = ex
	}
	return runWorkerData(ctx, c, cfg, d, ex, opts, onEpoch)
}

// newExchange returns the halo exchange of the worker holding part.
func newExchange(c comm.Communicator, part *partition.Part, cfg Config, opts DistOptions) (*halo.Exchange, error) {
	hc := halo.Config{Seed: cfg.Model.Seed, Layers: max(cfg.Model.Layers, 1)}
	if opts.Codec != nil {
		hc.Codec = opts.Codec()
	}
	if opts.Schedule != nil {
		hc.Schedule = opts.Schedule()
	}
	return halo.New(c, part, hc)
}

// runWorkerData trains d, this rank's share (with cfg's reducer and
// exchange set for more than one worker), as RunWorker describes.
func runWorkerData(ctx context.Context, c comm.Communicator, cfg Config, d Data, ex *halo.Exchange, opts DistOptions, onEpoch func(DistMetrics) error) (Result, *Trainer, error) {
	tr, err := New(cfg, d)
	if err != nil {
		return Result{}, nil, err
	}
	if opts.Resume != nil {
		if err := tr.Restore(opts.Resume); err != nil {
			return Result{}, nil, err
		}
	}
	save := func() error {
		if c.Rank() != 0 || opts.SaveCheckpoint == nil {
			return nil
		}
		st, err := tr.Checkpoint()
		if err != nil {
			return err
		}
		return opts.SaveCheckpoint(st)
	}
	var prev [counterFields]float64
	var elapsed float64
	send, recv := make([][]byte, c.Size()), make([][]byte, c.Size())
	res, err := tr.Run(ctx, func(m Metrics) error {
		elapsed += m.EpochSeconds
		now := counters(ex, c.Stats(), elapsed).slice()
		var delta [counterFields]float64
		for i := range now {
			delta[i] = now[i] - prev[i]
		}
		prev = now
		all, err := gatherCounters(c, delta, send, recv)
		if err != nil {
			return err
		}
		dm := DistMetrics{Metrics: m, Ratio: 1, WorkerCompute: make([]float64, len(all))}
		if ex != nil {
			dm.Ratio = ex.TrainingRatio()
		}
		for r, w := range all {
			dm.BytesFwd += int64(w[0])
			dm.BytesBwd += int64(w[1])
			dm.BytesGrad += int64(w[2])
			compute := max(w[6]-w[3], 0)
			dm.WorkerCompute[r] = compute
			dm.ComputeSeconds = max(dm.ComputeSeconds, compute)
			dm.CommSeconds = max(dm.CommSeconds, w[3])
			dm.EmulatedCommSeconds = max(dm.EmulatedCommSeconds, w[4])
			dm.EmulatedSeconds = max(dm.EmulatedSeconds, compute+w[4])
			dm.CodecSeconds = max(dm.CodecSeconds, w[5])
		}
		if opts.CheckpointEvery > 0 && m.Epoch%opts.CheckpointEvery == 0 {
			if err := save(); err != nil {
				return fmt.Errorf("checkpoint after epoch %d: %w", m.Epoch, err)
			}
		}
		if onEpoch != nil {
			return onEpoch(dm)
		}
		return nil
	})
	if errors.Is(err, ErrInterrupted) && !errors.Is(err, comm.ErrAborted) {
		// Keep the interrupted run's exact state, then hand back the best
		// parameters like a finished run does.
		if serr := save(); serr != nil {
			err = fmt.Errorf("%w; saving its checkpoint failed: %v", err, serr)
		}
		tr.RestoreBest()
		// Stopping is an error to the group: wait until every worker is past
		// its last collective, so nobody's departure aborts another's.
		if berr := c.Barrier("stop"); berr != nil {
			err = fmt.Errorf("%w; %v", err, berr)
		}
	}
	return res, tr, err
}

// gatherCounters gives every rank every rank's counters.
func gatherCounters(c comm.Communicator, mine [counterFields]float64, send, recv [][]byte) ([][counterFields]float64, error) {
	buf := make([]byte, 0, 8*counterFields)
	for _, v := range mine {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	for p := range send {
		send[p] = buf
	}
	if err := c.AllToAll(epochSite, send, recv); err != nil {
		return nil, fmt.Errorf("fullgraph: exchanging epoch counters: %w", err)
	}
	all := make([][counterFields]float64, len(recv))
	for r, b := range recv {
		if len(b) != 8*counterFields {
			return nil, fmt.Errorf("fullgraph: rank %d sent %d counter bytes", r, len(b))
		}
		for i := range counterFields {
			all[r][i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return all, nil
}

// RunInProcess trains with one goroutine per part of layout, connected by
// an in-process comm.Group, and returns rank 0's result and trainer. A nil
// or one-part layout is plain single-process training.
func RunInProcess(ctx context.Context, cfg Config, p Problem, layout *partition.Layout, opts DistOptions, onEpoch func(DistMetrics) error) (Result, *Trainer, error) {
	var res Result
	var tr *Trainer
	if layout == nil || layout.K == 1 {
		return RunWorker(ctx, comm.NewGroup(1).Comm(0), cfg, p, nil, opts, onEpoch)
	}
	err := comm.Run(layout.K, func(c comm.Communicator) error {
		var cb func(DistMetrics) error
		if c.Rank() == 0 {
			cb = onEpoch
		}
		r, t, err := RunWorker(ctx, c, cfg, p, layout, opts, cb)
		if c.Rank() == 0 {
			res, tr = r, t
		}
		return err
	})
	return res, tr, err
}
