package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/bench"
)

// minibatchFlags are bench train's flags of its mini-batch mode.
type minibatchFlags struct {
	sampler        *string
	batch          *int
	layers, hidden *int
	graphs         *listFlag
	evaluate       *bool
}

func minibatchBenchFlags(fs *flag.FlagSet) minibatchFlags {
	f := minibatchFlags{graphs: &listFlag{}}
	f.sampler = fs.String("sampler", "", "time mini-batch epochs drawn by this sampler form (as graft train's --sampler) against their floor, instead of full-graph epochs")
	f.batch = fs.Int("batch-size", 1024, "with --sampler: seeds per batch")
	f.layers = fs.Int("layers", 3, "with --sampler: the model's layers")
	f.hidden = fs.Int("hidden", 256, "with --sampler: the model's hidden width")
	f.evaluate = fs.Bool("eval", true, "with --sampler: time one exact layer-wise evaluation after the epochs (its memory counts in the peak RSS)")
	fs.Var(f.graphs, "graph", "with --sampler: a dataset name or generated graph (repeatable; default the ogbn-products-sized sbm:2400000:52:100:47, and amazon-computers when the data directory is set)")
	return f
}

// benchMinibatch is graft bench train --sampler: per graph, mini-batch
// epochs beside the floor measured in the same run.
func benchMinibatch(fs *flag.FlagSet, f minibatchFlags, asJSON, quick bool, reps int, dataDir, cpuProfile, models string, dropout float64, stdout, stderr io.Writer) error {
	cfg := bench.DefaultMinibatchConfig()
	if quick {
		cfg = bench.QuickMinibatchConfig()
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	cfg.Sampler, cfg.DataDir, cfg.Dropout, cfg.Eval = *f.sampler, dataset.ResolveDataDir(dataDir), dropout, *f.evaluate
	if set["batch-size"] || !quick {
		cfg.BatchSize = *f.batch
	}
	if set["hidden"] || !quick {
		cfg.Hidden = *f.hidden
	}
	cfg.Layers = *f.layers
	if reps > 0 {
		cfg.Reps = reps
	}
	switch {
	case len(*f.graphs) > 0:
		cfg.Graphs = *f.graphs
	case cfg.DataDir != "" && !quick:
		cfg.Graphs = append(cfg.Graphs, "amazon-computers")
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"batch-size", cfg.BatchSize}, {"layers", cfg.Layers}, {"hidden", cfg.Hidden}} {
		if v.n < 1 {
			return usageError{fmt.Errorf("--%s %d: want 1 or more", v.name, v.n)}
		}
	}
	list := []string{"sage"}
	if set["models"] {
		list = strings.Split(models, ",")
	}
	cfg.Progress = func(format string, args ...any) { fmt.Fprintf(stderr, "graft bench train: "+format+"\n", args...) }
	stopProfile, err := startCPUProfile(cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if !asJSON {
		fmt.Fprintf(stdout, "%-24s %-5s %-18s %7s %10s %10s %8s %8s %9s %9s %11s %10s\n", "graph", "model", "sampler", "batches",
			"epoch ms", "floor ms", "bound", "× floor", "smp+gath", "wait ms", "alloc/epoch", "peak RSS")
	}
	enc := json.NewEncoder(stdout)
	var encErr error
	for _, model := range list {
		cfg.Model = model
		err := bench.Minibatch(cfg, func(r bench.MinibatchResult) {
			if asJSON {
				if err := enc.Encode(r); err != nil && encErr == nil {
					encErr = err
				}
				return
			}
			fmt.Fprintf(stdout, "%-24s %-5s %-18s %7d %10.0f %10.0f %8s %8.2f %8.0f%% %9.0f %11s %10s\n", r.Graph, r.Model, r.Sampler,
				r.Batches, r.EpochMs, r.FloorMs, r.FloorBound, r.TimesFloor, 100*r.SampleGatherShare, r.WaitMs,
				formatAlloc(r.AllocPerEpoch), formatBytes(r.PeakRSSBytes))
		})
		if err != nil {
			return err
		}
	}
	return encErr
}
