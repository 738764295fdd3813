package bench

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
	"github.com/graft-gnn/graft/train/minibatch"
)

// MinibatchConfig sizes graft bench train --sampler.
type MinibatchConfig struct {
	// Graphs are dataset names or generated specs (sbm:…); DataDir is
	// where named datasets are read from.
	Graphs  []string
	DataDir string
	Model   string
	Sampler string // a sampler form (sample.Forms); its depth is the model's
	// BatchSize is the seeds per batch; Layers and Hidden the model's
	// depth (the sampler's, for the layer-wise samplers) and width.
	BatchSize, Layers, Hidden int
	Dropout                   float64
	// Reps timed epochs after one warm-up epoch (the median is reported).
	Reps int
	// Eval adds one exact layer-wise evaluation after the timed epochs.
	Eval bool
	// Precision is the run's precision (train.FP32 or train.BF16: the
	// features and evaluation's stored layers in bfloat16).
	Precision train.Precision
	Seed      uint64
	// Progress, if set, is told how far an epoch has got now and then.
	Progress func(format string, args ...any)
}

// DefaultMinibatchConfig is the setting of the mini-batch targets: the
// ogbn-products-sized graph, GraphSAGE with 3 layers of width 256, fanouts
// 15,10,5 and batches of 1024 seeds.
func DefaultMinibatchConfig() MinibatchConfig {
	return MinibatchConfig{Graphs: []string{"sbm:2400000:52:100:47"}, Model: "sage", Sampler: "neighbor:15,10,5",
		BatchSize: 1024, Layers: 3, Hidden: 256, Dropout: 0.5, Reps: 2, Eval: true, Seed: 1}
}

// QuickMinibatchConfig is a small configuration for smoke tests.
func QuickMinibatchConfig() MinibatchConfig {
	return MinibatchConfig{Graphs: []string{"sbm:20000:20:16:8"}, Model: "sage", Sampler: "neighbor:10,5,3",
		BatchSize: 256, Layers: 3, Hidden: 32, Dropout: 0.5, Reps: 2, Eval: true, Seed: 1}
}

// MinibatchResult is one graph's mini-batch epochs against their floor:
// the larger of the bytes the batches gather over the triad bandwidth and
// their flops over the GEMM rate, both measured in the same run.
type MinibatchResult struct {
	Graph     string `json:"graph"`
	Model     string `json:"model"`
	Sampler   string `json:"sampler"`
	Precision string `json:"precision"`
	BatchSize int    `json:"batch_size"`
	Layers    int    `json:"layers"`
	Hidden    int    `json:"hidden"`
	Nodes     int    `json:"nodes"`
	Edges     int64  `json:"edges"`
	Batches   int    `json:"batches"`
	Epochs    int    `json:"epochs"` // timed epochs
	Threads   int    `json:"threads"`

	TriadGBps   float64 `json:"triad_gbps"`
	GemmGFLOPS  float64 `json:"gemm_gflops"`
	LoadSeconds float64 `json:"load_seconds"` // reading or generating the graph
	SetupMs     float64 `json:"setup_ms"`     // making the sampler and the model

	FirstEpochMs float64 `json:"first_epoch_ms"`
	EpochMs      float64 `json:"epoch_ms"` // median timed epoch
	EpochMsMin   float64 `json:"epoch_ms_min"`
	// The median epoch's figures: its floor and what bounds it ("memory"
	// or "compute"), the bytes and flops behind it, the share of the
	// epoch's wall time the background sampling and gathering took
	// (together and each), and how long the model waited for a batch.
	FloorMs           float64 `json:"floor_ms"`
	FloorBound        string  `json:"floor_bound"`
	TimesFloor        float64 `json:"times_floor"`
	GatheredBytes     float64 `json:"gathered_bytes"`
	Flops             float64 `json:"flops"`
	SampleGatherShare float64 `json:"sample_gather_share"`
	SampleShare       float64 `json:"sample_share"`
	GatherShare       float64 `json:"gather_share"`
	WaitMs            float64 `json:"wait_ms"`
	// SampleAloneMs and GatherAloneMs are what sampling and gathering the
	// median epoch's batches took with the model idle
	// (minibatch.Stepper.PrepareAlone), and SampleGatherAloneShare their
	// sum over the epoch's wall time: what they cost, where the shares
	// above count, too, the time the background work waited for a core
	// the model's products held.
	SampleAloneMs          float64 `json:"sample_alone_ms"`
	GatherAloneMs          float64 `json:"gather_alone_ms"`
	SampleGatherAloneShare float64 `json:"sample_gather_alone_share"`
	SeedsPerSecond         float64 `json:"seeds_per_second"`
	AllocPerEpoch          float64 `json:"alloc_bytes_per_epoch"` // over the timed epochs
	EvalMs                 float64 `json:"eval_ms,omitempty"`
	PeakRSSBytes           int64   `json:"peak_rss_bytes"` // graph, training and evaluation
}

// epochFigures is one timed epoch.
type epochFigures struct {
	epoch int
	ms    float64
	stats minibatch.Stats
}

// Minibatch measures the machine's triad bandwidth and GEMM rate, then
// trains cfg's model with cfg's sampler on every graph for one warm-up
// epoch and cfg.Reps timed ones, calling emit after each graph. Graphs are
// loaded one at a time so that a run's peak RSS is its own graph's.
func Minibatch(cfg MinibatchConfig, emit func(MinibatchResult)) error {
	if cfg.Reps < 1 {
		return fmt.Errorf("bench: %d timed epochs; want 1 or more", cfg.Reps)
	}
	precision, err := train.ParsePrecision(string(cfg.Precision))
	if err != nil {
		return err
	}
	triad := vec.TriadBandwidth(32<<20, 5)
	gemmRate := gemmGFLOPS(precision.Products(), cfg.Hidden, cfg.Seed)
	for _, name := range cfg.Graphs {
		r, err := minibatchRun(name, cfg)
		if err != nil {
			return fmt.Errorf("%s on %s: %w", cfg.Sampler, name, err)
		}
		r.TriadGBps, r.GemmGFLOPS = triad, gemmRate
		r.floor()
		emit(r)
	}
	return nil
}

// floor fills in the floor of the median epoch from its bytes and flops.
func (r *MinibatchResult) floor() {
	memory := r.GatheredBytes / (r.TriadGBps * 1e9) * 1e3
	compute := r.Flops / (r.GemmGFLOPS * 1e9) * 1e3
	r.FloorMs, r.FloorBound = memory, "memory"
	if compute > memory {
		r.FloorMs, r.FloorBound = compute, "compute"
	}
	if r.FloorMs > 0 {
		r.TimesFloor = r.EpochMs / r.FloorMs
	}
}

// gemmGFLOPS is the best rate of a tall GEMM as the model's layers run
// them at products p (at bf16 rounding both operands, on the CPU's bf16
// instructions where they outpace float32): 100,000 rows times a
// width×width weight.
func gemmGFLOPS(p tensor.Products, width int, seed uint64) float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	m := 100000
	a, b, c := randSlice(r, m*width), randSlice(r, width*width), make([]float32, m*width)
	sec, _ := timeBest(5, func() { p.Gemm(false, false, m, width, width, a, width, b, width, c, width, false) })
	return 2 * float64(m) * float64(width) * float64(width) / sec / 1e9
}

func minibatchRun(name string, cfg MinibatchConfig) (MinibatchResult, error) {
	runtime.GC()
	debug.FreeOSMemory()
	sysstat.ResetPeakRSS()
	precision, err := train.ParsePrecision(string(cfg.Precision))
	if err != nil {
		return MinibatchResult{}, err
	}
	start := time.Now()
	p, classes, err := minibatchProblem(name, cfg)
	if err != nil {
		return MinibatchResult{}, err
	}
	if precision == train.BF16 {
		p = p.WithBF16Features()
	}
	r := MinibatchResult{Graph: name, Model: cfg.Model, Sampler: cfg.Sampler, Precision: string(precision), BatchSize: cfg.BatchSize,
		Layers: cfg.Layers, Hidden: cfg.Hidden, Nodes: p.Graph.N, Edges: p.Graph.NumEdges(), Epochs: cfg.Reps,
		Threads: runtime.GOMAXPROCS(0), LoadSeconds: time.Since(start).Seconds()}

	start = time.Now()
	preset, err := train.PresetFor(cfg.Model)
	if err != nil {
		return r, err
	}
	tc := preset.Config(cfg.Model, classes, cfg.Seed)
	tc.Model.Hidden, tc.Model.Dropout = cfg.Hidden, cfg.Dropout
	tc.Model.Layers = cfg.Layers
	agg, err := sample.AggregationOf(cfg.Model)
	if err != nil {
		return r, err
	}
	sampler, err := sample.New(cfg.Sampler, sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: cfg.BatchSize,
		Layers: tc.Model.Layers, Aggregation: agg, Seed: cfg.Seed})
	if err != nil {
		return r, err
	}
	s, err := minibatch.New(tc, p, sampler, minibatch.Options{Precision: precision})
	if err != nil {
		return r, err
	}
	defer s.Close()
	loop, err := train.New(tc, s)
	if err != nil {
		return r, err
	}
	r.Batches = s.Batches()
	r.SetupMs = ms(time.Since(start))

	first, err := timeMinibatchEpoch(loop, s, 1, cfg.Progress)
	if err != nil {
		return r, err
	}
	r.FirstEpochMs = first.ms
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	epochs := make([]epochFigures, cfg.Reps)
	for i := range epochs {
		if epochs[i], err = timeMinibatchEpoch(loop, s, 2+i, cfg.Progress); err != nil {
			return r, err
		}
	}
	runtime.ReadMemStats(&after)
	r.AllocPerEpoch = float64(after.TotalAlloc-before.TotalAlloc) / float64(cfg.Reps)
	slices.SortFunc(epochs, func(a, b epochFigures) int { return cmp.Compare(a.ms, b.ms) })
	med := epochs[len(epochs)/2]
	r.EpochMs, r.EpochMsMin = med.ms, epochs[0].ms
	st := med.stats
	r.GatheredBytes, r.Flops = st.GatheredBytes, st.Flops
	r.SampleShare, r.GatherShare = st.SampleSeconds/(med.ms/1e3), st.GatherSeconds/(med.ms/1e3)
	r.SampleGatherShare = r.SampleShare + r.GatherShare
	r.WaitMs = st.WaitSeconds * 1e3
	r.SeedsPerSecond = float64(st.Seeds) / (med.ms / 1e3)
	alone, err := s.PrepareAlone(med.epoch)
	if err != nil {
		return r, err
	}
	r.SampleAloneMs, r.GatherAloneMs = alone.SampleSeconds*1e3, alone.GatherSeconds*1e3
	r.SampleGatherAloneShare = (r.SampleAloneMs + r.GatherAloneMs) / med.ms
	if cfg.Eval {
		start := time.Now()
		if _, err := s.Evaluate(0); err != nil {
			return r, err
		}
		r.EvalMs = ms(time.Since(start))
	}
	r.PeakRSSBytes = sysstat.PeakRSS()
	return r, nil
}

// timeMinibatchEpoch runs every optimiser step of epoch and returns its
// wall time and the stepper's figures for it.
func timeMinibatchEpoch(loop *train.Loop, s *minibatch.Stepper, epoch int, progress func(string, ...any)) (epochFigures, error) {
	s.TakeStats()
	start := time.Now()
	last := start
	for b := range s.Batches() {
		if _, err := loop.Step(epoch, b); err != nil {
			return epochFigures{}, err
		}
		if progress != nil && time.Since(last) > 10*time.Second {
			last = time.Now()
			progress("epoch %d: batch %d of %d, %.0f s", epoch, b+1, s.Batches(), time.Since(start).Seconds())
		}
	}
	return epochFigures{epoch: epoch, ms: ms(time.Since(start)), stats: s.TakeStats()}, nil
}

// minibatchProblem loads name with its public split and its features as
// they are stored.
func minibatchProblem(name string, cfg MinibatchConfig) (train.Problem, int, error) {
	ds, err := dataset.Load(name, cfg.DataDir)
	if err != nil {
		return train.Problem{}, 0, err
	}
	split, err := ds.Split("public", cfg.Seed)
	if err != nil {
		if split, err = ds.Split("random:20:30", cfg.Seed); err != nil {
			return train.Problem{}, 0, err
		}
	}
	data, err := fullgraph.FromDataset(ds, split, nn.Auto, false)
	if err != nil {
		return train.Problem{}, 0, err
	}
	return train.Problem{Graph: ds.Graph, Features: data.Features, Labels: data.Labels,
		Train: data.Train, Val: data.Val, Test: data.Test}, ds.NumClasses, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
