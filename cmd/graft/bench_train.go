package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/bench"
)

// benchTrain times full-graph training epochs (graft bench train), or
// mini-batch epochs against their floor with --sampler.
func benchTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench train")
	mb := minibatchBenchFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per run")
	quick := fs.Bool("quick", false, "a 20k-node SBM instead of 1M nodes, for a smoke test")
	full, small := bench.DefaultTrainConfig(), bench.QuickTrainConfig()
	reps := fs.Int("reps", 0, "timed epochs per SBM run after one warm-up, the median reported"+quickDefault(full.Reps, small.Reps))
	nodes := fs.Int("nodes", 0, "SBM nodes (edges and features scale with the defaults)"+quickDefault(full.SBM.Nodes, small.SBM.Nodes))
	dataDir := fs.String("data-dir", "", "data directory holding Amazon Computers (default $"+dataset.DataDirEnv+"; skipped if unset)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs to `FILE` (go tool pprof)")
	models := fs.String("models", "gcn,sage", "comma-separated models to time")
	dropout := fs.Float64("dropout", 0.5, "dropout rate of the timed models (0 skips the dropout passes and their buffers)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *mb.sampler != "" {
		common := benchCommon{asJSON: *asJSON, quick: *quick, reps: *reps, dataDir: *dataDir, cpuProfile: *cpuProfile, models: *models, dropout: *dropout}
		return benchMinibatch(fs, mb, common, stdout, stderr)
	}
	cfg := bench.DefaultTrainConfig()
	if *quick {
		cfg = bench.QuickTrainConfig()
	}
	if err := setInt(fs, "reps", *reps, 1, &cfg.Reps); err != nil {
		return err
	}
	if err := setInt(fs, "nodes", *nodes, 2, &cfg.SBM.Nodes); err != nil {
		return err
	}
	cfg.DataDir = dataset.ResolveDataDir(*dataDir)
	cfg.Models = strings.Split(*models, ",")
	for _, m := range cfg.Models {
		if m != "gcn" && m != "sage" && m != "gat" {
			return usageError{fmt.Errorf("--models: unknown model %q (want gcn, sage or gat)", m)}
		}
	}
	if *dropout < 0 || *dropout >= 1 {
		return usageError{fmt.Errorf("--dropout %v: want a rate in [0, 1)", *dropout)}
	}
	cfg.Dropout = *dropout
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if !*asJSON {
		fmt.Fprintf(stdout, "%-18s %-5s %9s %10s %6s %10s %10s %12s %10s\n",
			"graph", "model", "nodes", "edges", "feat", "epoch ms", "min ms", "alloc/epoch", "peak RSS")
	}
	enc := json.NewEncoder(stdout)
	var encErr error
	err = bench.Train(cfg, func(r bench.TrainResult) {
		if *asJSON {
			if err := enc.Encode(r); err != nil && encErr == nil {
				encErr = err
			}
			return
		}
		feat := fmt.Sprint(r.Features)
		if r.Sparse {
			feat += "s"
		}
		fmt.Fprintf(stdout, "%-18s %-5s %9d %10d %6s %10.1f %10.1f %12s %10s\n", r.Graph, r.Model, r.Nodes, r.Edges,
			feat, r.EpochMs, r.EpochMsMin, formatAlloc(r.AllocPerEpoch), formatBytes(r.PeakRSSBytes))
	})
	if err != nil {
		return err
	}
	return encErr
}

// formatAlloc formats a per-epoch allocation, which is usually small.
func formatAlloc(b float64) string {
	switch {
	case b < 1<<10:
		return fmt.Sprintf("%.0f B", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return formatBytes(int64(b))
}

// startCPUProfile writes a CPU profile of the process to path (none when
// path is empty) until the returned function is called.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %v", err)
	}
	// Once, and at most once: an interrupt may stop the profile from the
	// signal's goroutine while the run stops it too.
	return sync.OnceFunc(func() { pprof.StopCPUProfile(); f.Close() }), nil
}
