package job

import (
	"errors"
	"io"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/launch"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/async"
	"github.com/graft-gnn/graft/train/fullgraph"
	"github.com/graft-gnn/graft/train/pipeline"
)

// Spec is one training job.
type Spec struct {
	// Dataset names a registered dataset (found under DataDir) or a path;
	// Split is a dataset.Split spec. LCC keeps the largest connected
	// component; RowNormalize scales features to sum to 1 per node;
	// Features chooses dense or sparse storage.
	Dataset, DataDir, Split string
	LCC, RowNormalize       bool
	// Files give the dataset labels or features from files (keyed by
	// its node ids).
	Files    dataset.NodeFiles
	Features nn.Storage

	// Recipe names the training recipe the settings came from (none, or
	// "" when the caller used none), for the summary.
	Recipe string
	// RecipeNote, if set, is said once the data is loaded and the
	// settings checked: what the recipe set that the caller did not.
	RecipeNote string

	// PartDir, when set, replaces the dataset: each worker reads its part
	// of what `graft partition --out DIR/` stored.
	PartDir string

	// Train is the run's configuration; its model's class count is taken
	// from the data.
	Train train.Config

	// Sampler, when set, trains on sampled mini-batches (a sample form,
	// e.g. neighbor:15,10,5) of BatchSize seeds instead of the whole graph.
	Sampler   string
	BatchSize int
	// EvalSampler, when set, evaluates on batches of the split's nodes
	// drawn by this seed-driven sampler instead of exactly.
	EvalSampler string
	// Async, when set, trains the mini-batches with a parameter server
	// (async.go) instead of one process's loop.
	Async *AsyncSpec
	// Pipeline, when set, trains the mini-batches with the model's
	// layers split into stages (pipeline.go) instead.
	Pipeline *PipelineSpec
	// Precision is what a run holds its dense features in, and its
	// stored activations (a mini-batch run's evaluation layers, a
	// full-graph run's layer projections and halo rows), and what its
	// training products multiply at (bf16 on a CPU with bf16
	// instructions, except data-parallel workers): "fp32" (or "") or
	// "bf16".
	Precision string

	// Parts is the number of workers, each holding one part of the graph,
	// split by Partition (a method name or an assignment file) seeded by
	// PartitionSeed. Codec and Schedule name the halo exchange's
	// compressor and ratio schedule ("" takes the codec's default), and
	// Link an emulated network link ("" for none). CompressLast compresses
	// the last layer's exchange too.
	Parts                 int
	Partition             string
	PartitionSeed         uint64
	Codec, Schedule, Link string
	// GradCompress is the gradient compression of a run of several
	// workers, a gradcomp spec ("" or "none": the exact all-reduce).
	GradCompress string
	CompressLast bool
	// EvalCodec compresses the evaluation passes' halo exchange of
	// full-graph training over parts ("" or "none": whole); the kept
	// model is then evaluated once more, exactly.
	EvalCodec string
	// Rebalance, when above 1, re-partitions the graph during full-graph
	// training whenever max/mean of the workers' measured compute time
	// exceeds it (fullgraph.Rebalance); 0 never does.
	Rebalance float64

	// CheckpointDir receives checkpoints every CheckpointEvery epochs and
	// when the job is interrupted; it must not hold another run's. Resume
	// continues the run checkpointed in that directory, which must have
	// been trained with the same settings but those ResumeAllow names
	// (of Resumable).
	CheckpointDir   string
	CheckpointEvery int
	Resume          string
	ResumeAllow     []string

	// Save receives the best parameters (safetensors) with the ModelInfo
	// that graft evaluate and predict read, their key names as the
	// nn.Layout SaveFormat names ("" for graft's own); MetricsFile one
	// JSON object per epoch; MetricsAddr a Prometheus endpoint.
	Save, SaveFormat         string
	MetricsFile, MetricsAddr string

	// Place is this process's place in a multi-process job (Size ≤ 1 for
	// a job in one process), and Launch how it connects to the others.
	Place  launch.Place
	Launch *launch.Flags

	// Progress, if set, receives every epoch, on every worker of a
	// multi-process job (rank 0 is the one that reports; the others' may
	// discard it, or watch their own progress); Log receives notes (resuming, serving metrics, a setting
	// that has no effect), nil for none.
	Progress func(metrics.Epoch)
	// BatchProgress, if set, is told after every mini-batch how many of
	// the epoch's batches are done (rank 0, --sampler only).
	BatchProgress func(epoch, done, batches int)
	Log           io.Writer

	record     map[string]string  // the settings checkpoints record (trajectory)
	async      *async.Result      // a parameter-server run's outcome, for the summary
	pipeline   *pipeline.Result   // a pipeline run's
	rebalances []fullgraph.Record // the re-partitions so far (with Rebalance)
	// measure, if set, replaces the measured compute times that Rebalance
	// decides by (fullgraph.Rebalance.Measure): for tests.
	measure func(epoch int, layout *partition.Layout, measured []float64) []float64
}

// SpecError marks an error in the Spec itself, as opposed to the data or the
// training: the command reports it as a usage error.
type SpecError struct{ error }

func (e SpecError) Unwrap() error { return e.error }

func specError(err error) error { return SpecError{err} }

// IsSpecError reports whether err comes from the Spec.
func IsSpecError(err error) bool {
	var se SpecError
	return errors.As(err, &se)
}

// Summary is the outcome of a job, as `graft train --json` prints it.
type Summary struct {
	Dataset      string  `json:"dataset"`
	Split        string  `json:"split"`
	Model        string  `json:"model"`
	Seed         uint64  `json:"seed"`
	Features     string  `json:"features"`
	Epochs       int     `json:"epochs"`
	StoppedEarly bool    `json:"stopped_early"`
	BestEpoch    int     `json:"best_epoch"`
	BestValAcc   float64 `json:"best_val_acc"`
	TestAcc      float64 `json:"test_acc"`
	TrainAcc     float64 `json:"train_acc"`
	// Metric is what model selection followed: the validation acc, auc
	// or f1, or loss. The macro-F1 and, on a binary task, the ROC-AUC of
	// the selected epoch are reported whichever it was.
	Metric         string   `json:"metric"`
	BestValMacroF1 float64  `json:"best_val_macro_f1"`
	TestMacroF1    float64  `json:"test_macro_f1"`
	BestValAUC     *float64 `json:"best_val_auc,omitempty"`
	TestAUC        *float64 `json:"test_auc,omitempty"`
	EpochMsMedian  float64  `json:"epoch_ms_median"`
	StepMsMedian   float64  `json:"step_ms_median"`
	PeakRSSBytes   int64    `json:"peak_rss_bytes"`
	// Memory is where the peak went (see MemoryAccount).
	Memory     *MemoryAccount `json:"memory,omitempty"`
	Parameters int            `json:"parameters"`

	// Partition-parallel runs (all workers summed; zero for one worker).
	Parts     int    `json:"parts"`
	Partition string `json:"partition,omitempty"`
	Compress  string `json:"compress"`
	Schedule  string `json:"schedule"`
	// GradCompress is the gradients' compression; BytesGrad counts what
	// it sent.
	GradCompress string `json:"grad_compress"`
	FloorEpoch   int    `json:"floor_epoch,omitempty"` // first epoch at the schedule's final ratio, where patience and model selection start (absent: never, or one worker)
	BytesTotal   int64  `json:"bytes_total"`
	BytesFwd     int64  `json:"bytes_fwd"`
	BytesBwd     int64  `json:"bytes_bwd"`
	BytesGrad    int64  `json:"bytes_grad"`
	// EvalCompress is the evaluation passes' halo codec ("": whole), and
	// BytesEval what those passes sent (not in BytesTotal).
	EvalCompress string `json:"eval_compress,omitempty"`
	BytesEval    int64  `json:"bytes_eval,omitempty"`
	// Data-parallel mini-batch runs: the sampled structure and the input
	// features fetched from their owners (the gradients are BytesGrad),
	// and the one-off exchanges before the first epoch (BytesTotal
	// includes them).
	BytesStructure int64 `json:"bytes_structure,omitempty"`
	BytesFeatures  int64 `json:"bytes_features,omitempty"`
	BytesSetup     int64 `json:"bytes_setup,omitempty"`
	// Parameter-server runs: the parameters the servers sent back to the
	// workers (the gradients pushed to them are BytesGrad).
	BytesParams     int64   `json:"bytes_params,omitempty"`
	ComputeSeconds  float64 `json:"compute_seconds"`
	CommSeconds     float64 `json:"comm_seconds"`
	CodecSeconds    float64 `json:"codec_seconds"`
	EmulatedSeconds float64 `json:"emulated_seconds"`
	WorkerImbalance float64 `json:"worker_imbalance"`

	// Mini-batch runs: the sampler and batch size; EpochMsMedian then times
	// the training pass alone (sampling, gathering, forward, backward,
	// step), and evaluation has its own median; training throughput in
	// epochs and seeds per second.
	Sampler     string `json:"sampler,omitempty"`
	BatchSize   int    `json:"batch_size,omitempty"`
	EvalSampler string `json:"eval_sampler,omitempty"`
	// Precision is what the features and stored activations were held
	// in, and the training products multiplied at: fp32 or bf16.
	Precision       string  `json:"precision"`
	EvalMsMedian    float64 `json:"eval_ms_median,omitempty"`
	EpochsPerSecond float64 `json:"epochs_per_second,omitempty"`
	SeedsPerSecond  float64 `json:"seeds_per_second,omitempty"`
	// Parameter-server runs: the mode (async, or ps-sync for the
	// synchronous baseline), the workers and servers, the staleness rule
	// and bound (absent: none), the gradients an update (absent: one),
	// the staleness over the run, the gradients dropped, the
	// updates applied per second and the run's wall time.
	Mode             string  `json:"mode,omitempty"`
	Workers          int     `json:"workers,omitempty"`
	Servers          int     `json:"servers,omitempty"`
	StalenessRule    string  `json:"staleness_rule,omitempty"`
	MaxStaleness     *int    `json:"max_staleness,omitempty"`
	GradsPerUpdate   int     `json:"grads_per_update,omitempty"`
	StalenessMean    float64 `json:"staleness_mean,omitempty"`
	StalenessP50     int     `json:"staleness_p50,omitempty"`
	StalenessP99     int     `json:"staleness_p99,omitempty"`
	StalenessMax     int     `json:"staleness_max,omitempty"`
	DroppedUpdates   int64   `json:"dropped_updates,omitempty"`
	UpdatesPerSecond float64 `json:"updates_per_second,omitempty"`
	TrainSeconds     float64 `json:"train_seconds,omitempty"`
	// Pipeline runs (Mode pipeline; TrainSeconds is their training
	// time): the stages, the micro-batches of a mini-batch, each stage's
	// layers, the schedule's bubble (the share of a mini-batch each stage
	// idles when the stages take equal time), and each stage's seconds of
	// computing and of waiting for another stage. BytesFwd and BytesBwd
	// are the activations and their gradients sent between the stages.
	Stages              int       `json:"stages,omitempty"`
	MicroBatches        int       `json:"micro_batches,omitempty"`
	StageLayers         []int     `json:"stage_layers,omitempty"`
	BubbleFraction      float64   `json:"bubble_fraction,omitempty"`
	StageComputeSeconds []float64 `json:"stage_compute_seconds,omitempty"`
	StageWaitSeconds    []float64 `json:"stage_wait_seconds,omitempty"`
	// Balance spreads part sizes (owned nodes, at the end of the run) and
	// per-worker compute time: coefficient of variation, max/mean
	// imbalance, efficiency.
	Balance *metrics.Balance `json:"balance,omitempty"`
	// Rebalances lists the re-partitions of a run with --rebalance (an
	// empty list: none was needed); absent without it.
	Rebalances *[]fullgraph.Record `json:"rebalances,omitempty"`

	// FeaturesMapped describes the mapped feature file, if any.
	FeaturesMapped *MappedSummary `json:"features_mapped,omitempty"`

	// Link is the emulated link, if any; Saved the parameters' file.
	Link  string `json:"link,omitempty"`
	Saved string `json:"saved,omitempty"`

	// Recipe is the training recipe in force (Spec.Recipe), and Settings
	// what the run was trained with.
	Recipe   string    `json:"recipe,omitempty"`
	Settings *Settings `json:"settings"`
	// Leader is false on the workers of a multi-process job that do not
	// report (all but rank 0): their summary is empty.
	Leader bool `json:"-"`
}
