package bench

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// TrainConfig sizes graft bench train.
type TrainConfig struct {
	Models  []string // "gcn", "sage"
	Hidden  int
	Dropout float64
	// SBM is the synthetic graph; Nodes 0 skips it.
	SBM graph.SBMConfig
	// DataDir, if set, adds Amazon Computers from it.
	DataDir string
	// Reps timed epochs per run after one warm-up epoch (the median is
	// reported); SmallReps for the small real graphs.
	Reps, SmallReps int
	Seed            uint64
}

// DefaultTrainConfig is the configuration the project's targets are stated
// for: a 1M-node SBM with 15M stored edges (7.5M undirected, counted in both
// directions as PyG's edge_index does), 128 features and hidden width 128.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{
		Models: []string{"gcn", "sage"}, Hidden: 128, Dropout: 0.5,
		SBM:  graph.SBMConfig{Nodes: 1_000_000, Classes: 16, AvgDegree: 15, Homophily: 0.8, Features: 128, FeatureNoise: 1},
		Reps: 5, SmallReps: 20, Seed: 1,
	}
}

// QuickTrainConfig is a small configuration for smoke tests.
func QuickTrainConfig() TrainConfig {
	c := DefaultTrainConfig()
	c.SBM.Nodes, c.Hidden, c.Reps, c.SmallReps = 20_000, 32, 2, 2
	return c
}

// TrainResult is one timed run: full-graph epochs (forward, loss, backward,
// optimiser step; no evaluation) of one model on one graph.
type TrainResult struct {
	Graph         string  `json:"graph"`
	Model         string  `json:"model"`
	Nodes         int     `json:"nodes"`
	Edges         int64   `json:"edges"` // stored (directed) entries
	Features      int     `json:"features"`
	Sparse        bool    `json:"sparse_features"`
	Hidden        int     `json:"hidden"`
	Classes       int     `json:"classes"`
	Epochs        int     `json:"epochs"` // timed epochs
	EpochMs       float64 `json:"epoch_ms"`
	EpochMsMin    float64 `json:"epoch_ms_min"`
	FirstEpochMs  float64 `json:"first_epoch_ms"`
	AllocPerEpoch float64 `json:"alloc_bytes_per_epoch"` // after the first epoch
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	Threads       int     `json:"threads"`
}

// benchGraph is one input of the training benchmark.
type benchGraph struct {
	name   string
	graph  *graph.Graph
	data   fullgraph.Data
	edges  int64
	labels int
	reps   int
}

// Train runs every model on Cora, on Amazon Computers when cfg.DataDir holds
// it, and on the SBM graph, calling emit after each run. Graphs are loaded
// one at a time so that a run's peak RSS is its own graph's.
func Train(cfg TrainConfig, emit func(TrainResult)) error {
	loaders := []func() (*benchGraph, error){
		func() (*benchGraph, error) { return loadDatasetGraph("cora", "", cfg.SmallReps, cfg.Seed) },
	}
	if cfg.DataDir != "" {
		loaders = append(loaders, func() (*benchGraph, error) {
			return loadDatasetGraph("amazon-computers", cfg.DataDir, cfg.SmallReps, cfg.Seed)
		})
	}
	if cfg.SBM.Nodes > 0 {
		loaders = append(loaders, func() (*benchGraph, error) { return sbmGraph(cfg.SBM, cfg.Reps, cfg.Seed) })
	}
	for _, load := range loaders {
		g, err := load()
		if err != nil {
			return err
		}
		for _, model := range cfg.Models {
			r, err := timeEpochs(g, model, cfg)
			if err != nil {
				return fmt.Errorf("%s %s: %w", model, g.name, err)
			}
			emit(r)
		}
	}
	return nil
}

func loadDatasetGraph(name, dataDir string, reps int, seed uint64) (*benchGraph, error) {
	d, err := dataset.Load(name, dataDir)
	if err != nil {
		return nil, err
	}
	s, err := d.Split("random:20:30", seed)
	if err != nil {
		return nil, err
	}
	data, err := fullgraph.FromDataset(d, s, nn.Auto, true)
	if err != nil {
		return nil, err
	}
	return &benchGraph{name: name, graph: d.Graph, data: data, edges: d.Graph.NumEdges(), labels: d.NumClasses, reps: reps}, nil
}

func sbmGraph(c graph.SBMConfig, reps int, seed uint64) (*benchGraph, error) {
	g, x, labels, err := graph.SBM(c, seed)
	if err != nil {
		return nil, err
	}
	// Train on 10% of the nodes: the loss touches few rows either way, and
	// the cost of an epoch is the whole-graph forward and backward pass.
	var trainRows []int32
	for v := 0; v < g.N; v += 10 {
		trainRows = append(trainRows, int32(v))
	}
	data := fullgraph.Data{Block: nn.WholeGraph(g), Features: nn.DenseFeatures(x), Labels: labels, Train: trainRows}
	name := fmt.Sprintf("sbm-%dk", c.Nodes/1000)
	return &benchGraph{name: name, graph: g, data: data, edges: g.NumEdges(), labels: c.Classes, reps: reps}, nil
}

// timeEpochs trains model on g for one warm-up epoch and g.reps timed ones.
func timeEpochs(g *benchGraph, model string, cfg TrainConfig) (TrainResult, error) {
	// Each run gets fresh operators and buffers, measured from a clean heap.
	g.data.Block = nn.WholeGraph(g.graph)
	runtime.GC()
	debug.FreeOSMemory()
	sysstat.ResetPeakRSS()

	p, err := train.PresetFor(model)
	if err != nil {
		return TrainResult{}, err
	}
	p.Hidden, p.Dropout, p.Epochs = cfg.Hidden, cfg.Dropout, 1+g.reps
	tr, err := fullgraph.New(p.Config(model, g.labels, cfg.Seed), g.data, nil)
	if err != nil {
		return TrainResult{}, err
	}
	start := time.Now()
	if _, err := tr.Step(1, 0); err != nil {
		return TrainResult{}, err
	}
	first := time.Since(start)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	times := make([]float64, g.reps)
	for i := range times {
		start := time.Now()
		if _, err := tr.Step(1, 0); err != nil {
			return TrainResult{}, err
		}
		times[i] = float64(time.Since(start)) / float64(time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	slices.Sort(times)
	return TrainResult{
		Graph: g.name, Model: model, Nodes: g.data.Block.NumDst, Edges: g.edges,
		Features: g.data.Features.Cols(), Sparse: g.data.Features.IsSparse(),
		Hidden: cfg.Hidden, Classes: g.labels, Epochs: g.reps,
		EpochMs: times[len(times)/2], EpochMsMin: times[0],
		FirstEpochMs:  float64(first) / float64(time.Millisecond),
		AllocPerEpoch: float64(after.TotalAlloc-before.TotalAlloc) / float64(g.reps),
		PeakRSSBytes:  sysstat.PeakRSS(),
		Threads:       runtime.GOMAXPROCS(0),
	}, nil
}
