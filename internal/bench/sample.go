package bench

import (
	"fmt"
	"runtime"
	"time"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/sample"
)

// SampleConfig sizes graft bench sample.
type SampleConfig struct {
	Graphs   []string // dataset names or generated specs (sbm:…, rmat:…)
	DataDir  string
	Samplers []string // sampler forms, e.g. neighbor:15,10,5
	// Layers is the model depth the samplers draw for, BatchSize their
	// seeds per batch, and Batches how many batches are timed per run.
	Layers, BatchSize, Batches int
	Seed                       uint64
}

// DefaultSampleConfig is the configuration the project's targets are
// stated for: the ogbn-products-sized graph, three layers, fanouts
// 15,10,5, batches of 1024 seeds.
func DefaultSampleConfig() SampleConfig {
	return SampleConfig{Graphs: []string{"sbm:2400000:52:100:47"}, Samplers: []string{"neighbor:15,10,5"},
		Layers: 3, BatchSize: 1024, Batches: 20, Seed: 1}
}

// QuickSampleConfig is a small configuration for smoke tests.
func QuickSampleConfig() SampleConfig {
	return SampleConfig{Graphs: []string{"sbm:20000:20:16:8"}, Samplers: []string{"neighbor:10,5,3"},
		Layers: 3, BatchSize: 256, Batches: 5, Seed: 1}
}

// SampleResult is one sampler's throughput on one graph at one thread
// count: seeds and sampled block entries (edges) per second, and the mean
// input nodes of a batch.
type SampleResult struct {
	Graph          string  `json:"graph"`
	Sampler        string  `json:"sampler"`
	Threads        int     `json:"threads"`
	Batches        int     `json:"batches"`
	SetupSeconds   float64 `json:"setup_seconds"` // making the sampler (GraphSAINT's pre-sampling, Cluster-GCN's partitioning)
	Seconds        float64 `json:"seconds"`
	SeedsPerSecond float64 `json:"seeds_per_second"`
	EdgesPerSecond float64 `json:"edges_per_second"`
	// EdgesPerSecondPerThread is EdgesPerSecond over Threads.
	EdgesPerSecondPerThread float64 `json:"edges_per_second_per_thread"`
	InputNodes              float64 `json:"input_nodes"`
}

// Sample times every sampler of cfg on every graph, with one thread and
// with GOMAXPROCS threads, and hands each result to emit.
func Sample(cfg SampleConfig, emit func(SampleResult)) error {
	threads := []int{1}
	if n := runtime.GOMAXPROCS(0); n > 1 {
		threads = append(threads, n)
	}
	for _, name := range cfg.Graphs {
		ds, err := dataset.Load(name, cfg.DataDir)
		if err != nil {
			return err
		}
		train, err := trainNodes(ds, cfg.Seed)
		if err != nil {
			return err
		}
		for _, spec := range cfg.Samplers {
			for _, t := range threads {
				r, err := timeSampler(ds, train, spec, t, cfg)
				if err != nil {
					return err
				}
				emit(r)
			}
		}
	}
	return nil
}

// trainNodes is the dataset's public training split, or a tenth of its
// nodes where it ships none.
func trainNodes(ds *dataset.Dataset, seed uint64) ([]int32, error) {
	if s, err := ds.Split("public", seed); err == nil {
		return s.Train, nil
	}
	var train []int32
	for v := 0; v < ds.NumNodes(); v += 10 {
		train = append(train, int32(v))
	}
	return train, nil
}

func timeSampler(ds *dataset.Dataset, train []int32, spec string, threads int, cfg SampleConfig) (SampleResult, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	start := time.Now()
	s, err := sample.New(spec, sample.Config{Graph: ds.Graph, Train: train, BatchSize: cfg.BatchSize,
		Layers: cfg.Layers, Aggregation: sample.Mean, Seed: cfg.Seed})
	if err != nil {
		return SampleResult{}, fmt.Errorf("%s on %s: %w", spec, ds.Name, err)
	}
	r := SampleResult{Graph: ds.Name, Sampler: spec, Threads: threads, SetupSeconds: time.Since(start).Seconds()}
	var b sample.Batch
	if err := s.Sample(1, 0, &b); err != nil { // warm-up: the batch's storage grows
		return SampleResult{}, err
	}
	var seeds, edges, nodes int64
	start = time.Now()
	for i := range cfg.Batches {
		if err := s.Sample(2, i%s.Batches(), &b); err != nil {
			return SampleResult{}, err
		}
		seeds += int64(len(b.Loss))
		nodes += int64(len(b.Input))
		for _, blk := range b.Blocks {
			ops := blk.Operators()
			switch {
			case ops.Mean != nil:
				edges += int64(ops.Mean.NNZ())
			case ops.GCN != nil:
				edges += int64(ops.GCN.NNZ())
			case ops.Loops != nil:
				edges += int64(ops.Loops.NNZ())
			}
		}
	}
	r.Seconds = time.Since(start).Seconds()
	r.Batches = cfg.Batches
	r.SeedsPerSecond = float64(seeds) / r.Seconds
	r.EdgesPerSecond = float64(edges) / r.Seconds
	r.EdgesPerSecondPerThread = r.EdgesPerSecond / float64(threads)
	r.InputNodes = float64(nodes) / float64(cfg.Batches)
	return r, nil
}
