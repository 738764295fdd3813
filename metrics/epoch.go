package metrics

import (
	"errors"
	"slices"
)

// Epoch is one epoch of a training run, summed or maxed over all workers.
//
// The JSON keys and their order are those `graft train --metrics FILE`
// has always written, with rss_bytes added last, so files from before and
// after this type diff cleanly; evaluated, added later, is in every
// record (a record of an older file, without it, reads as false).
type Epoch struct {
	Epoch    int     `json:"epoch"` // 1-based
	Loss     float64 `json:"loss"`  // training loss of the step
	TrainAcc float64 `json:"train_acc"`
	ValAcc   float64 `json:"val_acc"`
	TestAcc  float64 `json:"test_acc"`
	ValLoss  float64 `json:"val_loss"`
	// EpochSeconds is the wall time of the whole epoch; StepSeconds of its
	// training part.
	EpochSeconds float64 `json:"epoch_seconds"`
	StepSeconds  float64 `json:"step_seconds"`

	// Ratio is the compression ratio of the epoch's boundary exchange (1:
	// uncompressed).
	Ratio float64 `json:"ratio"`
	// Bytes sent by all workers: forward activations, backward gradients
	// of the halo exchange, and the parameter-gradient all-reduce.
	BytesFwd  int64 `json:"bytes_fwd"`
	BytesBwd  int64 `json:"bytes_bwd"`
	BytesGrad int64 `json:"bytes_grad"`
	// BytesEval is what the evaluation passes' halo exchanges sent, apart
	// from the training's bytes above and from Bytes.
	BytesEval int64 `json:"bytes_eval,omitempty"`
	// Data-parallel mini-batch training: bytes sent by all workers for the
	// sampled structure (destinations asked of their owners and the
	// neighbours drawn for them) and for the input features (rows asked
	// and the rows). BytesSetup is the one-off exchanges before the first
	// epoch (who owns which node, the samplers' whole-graph figures,
	// GraphSAINT's pre-sampling): the first epoch a run trains, a resumed
	// run's included, reports them, the others none.
	BytesStructure int64 `json:"bytes_structure,omitempty"`
	BytesFeatures  int64 `json:"bytes_features,omitempty"`
	BytesSetup     int64 `json:"bytes_setup,omitempty"`
	// Parameter-server training (train/async): the parameters the servers
	// sent back to the workers, as counted by the servers (the gradients
	// pushed to them are BytesGrad).
	BytesParams int64 `json:"bytes_params,omitempty"`
	// The slowest worker's time outside communication, in communication
	// (measured, and on an emulated link), and compressing; EmulatedSeconds
	// is the epoch on the emulated link.
	ComputeSeconds      float64 `json:"compute_seconds"`
	CommSeconds         float64 `json:"comm_seconds"`
	EmulatedCommSeconds float64 `json:"emulated_comm_seconds"`
	EmulatedSeconds     float64 `json:"emulated_seconds"`
	CodecSeconds        float64 `json:"codec_seconds"`
	// WorkerCompute is each worker's compute seconds, by rank.
	WorkerCompute []float64 `json:"worker_compute_seconds"`
	// RSSBytes is the resident memory after the epoch (see ResidentBytes),
	// 0 when unknown.
	RSSBytes int64 `json:"rss_bytes,omitempty"`
	// Macro-F1 of the validation and test sets, and their ROC-AUC on
	// binary tasks (left out when 0).
	ValF1   float64 `json:"val_f1,omitempty"`
	TestF1  float64 `json:"test_f1,omitempty"`
	ValAUC  float64 `json:"val_auc,omitempty"`
	TestAUC float64 `json:"test_auc,omitempty"`

	// Mini-batch training: the epoch's batches; the seconds spent sampling
	// them, gathering their input features, and in the model (forward,
	// backward, step) while the model waited for a batch (WaitSeconds);
	// the mean input nodes and block edges of a batch; and whether the
	// epoch was evaluated (with --eval-every, not every epoch is) and how
	// long evaluation took.
	Batches       int     `json:"batches,omitempty"`
	SampleSeconds float64 `json:"sample_seconds,omitempty"`
	GatherSeconds float64 `json:"gather_seconds,omitempty"`
	WaitSeconds   float64 `json:"wait_seconds,omitempty"`
	InputNodes    float64 `json:"input_nodes,omitempty"`
	InputEdges    float64 `json:"input_edges,omitempty"`
	// Evaluated is false for an epoch that --eval-every skips (every
	// mode): its accuracies, F1, AUC and validation loss are then the
	// last evaluation's (zero before the first), not this epoch's.
	Evaluated   bool    `json:"evaluated"`
	EvalSeconds float64 `json:"eval_seconds,omitempty"`
	// GatheredBytes and Flops are the epoch's bytes its batches must
	// gather (input features and blocks) and its estimated floating-point
	// operations: with a memory bandwidth and a GEMM rate they give the
	// epoch's floor.
	GatheredBytes float64 `json:"gathered_bytes,omitempty"`
	Flops         float64 `json:"flops,omitempty"`

	// Asynchronous parameter-server training (train/async): the staleness
	// of the gradients the servers received during the epoch (mean,
	// median, 99th percentile, largest), the gradients dropped as too
	// stale, and the updates applied per second.
	StalenessMean    float64 `json:"staleness_mean,omitempty"`
	StalenessP50     int     `json:"staleness_p50,omitempty"`
	StalenessP99     int     `json:"staleness_p99,omitempty"`
	StalenessMax     int     `json:"staleness_max,omitempty"`
	DroppedUpdates   int64   `json:"dropped_updates,omitempty"`
	UpdatesPerSecond float64 `json:"updates_per_second,omitempty"`
}

// Bytes is everything the epoch's training sent, the setup it reports
// included (evaluation's halo rows are BytesEval).
func (e Epoch) Bytes() int64 {
	return e.BytesFwd + e.BytesBwd + e.BytesGrad + e.BytesStructure + e.BytesFeatures + e.BytesSetup + e.BytesParams
}

// Sink receives every recorded epoch.
type Sink interface {
	Record(Epoch) error
	Close() error
}

// Recorder hands each epoch of a run to its sinks and keeps the totals a
// final summary needs. A nil *Recorder records nothing, so a trainer can
// call it unconditionally. Its methods are not safe for concurrent use:
// one goroutine (one rank, when every rank sees the same epochs) records.
type Recorder struct {
	sinks  []Sink
	totals Totals
}

// NewRecorder returns a recorder writing to the given sinks (none is fine:
// it then only keeps totals).
func NewRecorder(sinks ...Sink) *Recorder {
	return &Recorder{sinks: sinks}
}

// Record adds e to the totals and hands it to every sink, even when an
// earlier one fails, so one broken output does not silence the others.
func (r *Recorder) Record(e Epoch) error {
	if r == nil {
		return nil
	}
	r.totals.add(e)
	var errs []error
	for _, s := range r.sinks {
		if err := s.Record(e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Totals returns the sums over the epochs recorded so far.
func (r *Recorder) Totals() Totals {
	if r == nil {
		return Totals{}
	}
	t := r.totals
	t.WorkerCompute = slices.Clone(t.WorkerCompute)
	return t
}

// Close closes every sink once; later calls do nothing.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, s := range r.sinks {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	r.sinks = nil
	return errors.Join(errs...)
}

// Totals are a run's epochs summed: what its final summary reports. The
// seconds are sums over epochs of each epoch's slowest worker, as Epoch
// holds them.
type Totals struct {
	Epochs                                    int
	BytesFwd, BytesBwd, BytesGrad             int64
	BytesStructure, BytesFeatures, BytesSetup int64
	BytesParams, BytesEval                    int64
	ComputeSeconds, CommSeconds, CodecSeconds float64
	EmulatedSeconds, EmulatedCommSeconds      float64
	WorkerCompute                             []float64 // each worker's compute seconds over the run
}

func (t *Totals) add(e Epoch) {
	t.Epochs++
	t.BytesFwd += e.BytesFwd
	t.BytesBwd += e.BytesBwd
	t.BytesGrad += e.BytesGrad
	t.BytesStructure += e.BytesStructure
	t.BytesFeatures += e.BytesFeatures
	t.BytesSetup += e.BytesSetup
	t.BytesParams += e.BytesParams
	t.BytesEval += e.BytesEval
	t.ComputeSeconds += e.ComputeSeconds
	t.CommSeconds += e.CommSeconds
	t.CodecSeconds += e.CodecSeconds
	t.EmulatedSeconds += e.EmulatedSeconds
	t.EmulatedCommSeconds += e.EmulatedCommSeconds
	if n := len(e.WorkerCompute); n > len(t.WorkerCompute) {
		t.WorkerCompute = append(t.WorkerCompute, make([]float64, n-len(t.WorkerCompute))...)
	}
	for i, c := range e.WorkerCompute {
		t.WorkerCompute[i] += c
	}
}

// BytesTotal is everything the run's training sent, its setup included
// (evaluation's halo rows are BytesEval).
func (t Totals) BytesTotal() int64 {
	return t.BytesFwd + t.BytesBwd + t.BytesGrad + t.BytesStructure + t.BytesFeatures + t.BytesSetup + t.BytesParams
}

// WorkerImbalance is the slowest worker's compute time over the run
// divided by the mean (1: perfectly balanced), the worker_imbalance of
// graft train's summary; 0 when no worker reported compute time.
func (t Totals) WorkerImbalance() float64 { return SpreadOf(t.WorkerCompute).Imbalance }
