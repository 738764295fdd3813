package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/bench"
	"github.com/graft-gnn/graft/train"
)

// minibatchFlags are bench train's flags of its mini-batch mode.
type minibatchFlags struct {
	sampler        *string
	batch          *int
	layers, hidden *int
	graphs         *listFlag
	evaluate       *bool
	precision      *string
}

func minibatchBenchFlags(fs *flag.FlagSet) minibatchFlags {
	f := minibatchFlags{graphs: &listFlag{}}
	f.sampler = fs.String("sampler", "", "time mini-batch epochs drawn by this sampler form (as graft train's --sampler) against their floor, instead of full-graph epochs")
	f.batch = fs.Int("batch-size", 1024, "with --sampler: seeds per batch")
	f.layers = fs.Int("layers", 3, "with --sampler: the model's layers")
	f.hidden = fs.Int("hidden", 256, "with --sampler: the model's hidden width")
	f.precision = fs.String("precision", "fp32", "with --sampler: fp32, or bf16 (features and evaluation's stored layers in bfloat16, products on the CPU's bf16 instructions where they outpace float32, as graft train --precision bf16)")
	f.evaluate = fs.Bool("eval", true, "with --sampler: time one exact layer-wise evaluation after the epochs (its memory counts in the peak RSS)")
	fs.Var(f.graphs, "graph", "with --sampler: a dataset name or generated `graph` (repeatable; default the ogbn-products-sized sbm:2400000:52:100:47, and amazon-computers when the data directory is set)")
	return f
}

// benchCommon are the bench train flags both of its modes read.
type benchCommon struct {
	asJSON, quick               bool
	reps                        int
	dataDir, cpuProfile, models string
	dropout                     float64
}

// benchMinibatch is graft bench train --sampler: per graph, mini-batch
// epochs beside the floor measured in the same run.
func benchMinibatch(fs *flag.FlagSet, f minibatchFlags, c benchCommon, stdout, stderr io.Writer) error {
	cfg := bench.DefaultMinibatchConfig()
	if c.quick {
		cfg = bench.QuickMinibatchConfig()
	}
	cfg.Sampler, cfg.DataDir, cfg.Dropout, cfg.Eval = *f.sampler, dataset.ResolveDataDir(c.dataDir), c.dropout, *f.evaluate
	cfg.Precision = train.Precision(*f.precision)
	for _, v := range []struct {
		name string
		v    int
		dst  *int
	}{{"batch-size", *f.batch, &cfg.BatchSize}, {"hidden", *f.hidden, &cfg.Hidden}, {"layers", *f.layers, &cfg.Layers}, {"reps", c.reps, &cfg.Reps}} {
		if err := setInt(fs, v.name, v.v, 1, v.dst); err != nil {
			return err
		}
	}
	switch {
	case len(*f.graphs) > 0:
		cfg.Graphs = *f.graphs
	case cfg.DataDir != "" && !c.quick:
		cfg.Graphs = append(cfg.Graphs, "amazon-computers")
	}
	list := []string{"sage"}
	if flagSet(fs, "models") {
		list = strings.Split(c.models, ",")
	}
	cfg.Progress = func(format string, args ...any) { fmt.Fprintf(stderr, "graft bench train: "+format+"\n", args...) }
	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if !c.asJSON {
		fmt.Fprintf(stdout, "%-24s %-5s %-18s %7s %10s %10s %8s %8s %9s %9s %9s %11s %10s\n", "graph", "model", "sampler", "batches",
			"epoch ms", "floor ms", "bound", "× floor", "smp+gath", "alone", "wait ms", "alloc/epoch", "peak RSS")
	}
	enc := json.NewEncoder(stdout)
	var encErr error
	for _, model := range list {
		cfg.Model = model
		err := bench.Minibatch(cfg, func(r bench.MinibatchResult) {
			if c.asJSON {
				if err := enc.Encode(r); err != nil && encErr == nil {
					encErr = err
				}
				return
			}
			fmt.Fprintf(stdout, "%-24s %-5s %-18s %7d %10.0f %10.0f %8s %8.2f %8.0f%% %8.0f%% %9.0f %11s %10s\n", r.Graph, r.Model, r.Sampler,
				r.Batches, r.EpochMs, r.FloorMs, r.FloorBound, r.TimesFloor, 100*r.SampleGatherShare, 100*r.SampleGatherAloneShare, r.WaitMs,
				formatAlloc(r.AllocPerEpoch), formatBytes(r.PeakRSSBytes))
		})
		if err != nil {
			return err
		}
	}
	return encErr
}
