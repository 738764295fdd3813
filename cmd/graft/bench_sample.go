package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/bench"
)

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func benchSample(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench sample")
	asJSON := fs.Bool("json", false, "print one JSON object per run")
	quick := fs.Bool("quick", false, "a 20k-node SBM, for a smoke test")
	var graphs, samplers listFlag
	fs.Var(&graphs, "graph", "a dataset name or generated `graph` to sample (repeatable; default the ogbn-products-sized sbm:2400000:52:100:47, and amazon-computers when the data directory is set)")
	full, small := bench.DefaultSampleConfig(), bench.QuickSampleConfig()
	fs.Var(&samplers, "sampler", "a `sampler` form to time, each for the depth its form gives (repeatable; default one of every kind: "+strings.Join(full.Samplers, " ")+"; with --quick "+strings.Join(small.Samplers, " ")+")")
	batch := fs.Int("batch-size", 0, "seeds per batch"+quickDefault(full.BatchSize, small.BatchSize))
	batches := fs.Int("batches", 0, "batches timed per run"+quickDefault(full.Batches, small.Batches))
	dataDir := fs.String("data-dir", "", "data directory for named datasets (default $GRAFT_DATA)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs to `FILE` (go tool pprof)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	cfg := bench.DefaultSampleConfig()
	if *quick {
		cfg = bench.QuickSampleConfig()
	}
	cfg.DataDir = dataset.ResolveDataDir(*dataDir)
	switch {
	case len(graphs) > 0:
		cfg.Graphs = graphs
	case cfg.DataDir != "" && !*quick:
		cfg.Graphs = append(cfg.Graphs, "amazon-computers")
	}
	if len(samplers) > 0 {
		cfg.Samplers = samplers
	}
	if err := bench.CheckSamplers(cfg); err != nil {
		return usageError{fmt.Errorf("--sampler: %v", err)}
	}
	if err := setInt(fs, "batch-size", *batch, 1, &cfg.BatchSize); err != nil {
		return err
	}
	if err := setInt(fs, "batches", *batches, 1, &cfg.Batches); err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "%-24s %-22s %7s %9s %12s %14s %14s %12s\n", "graph", "sampler", "threads", "setup s", "seeds/s", "edges/s", "edges/s/thread", "input nodes")
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	enc := json.NewEncoder(stdout)
	var encErr error
	err = bench.Sample(cfg, func(r bench.SampleResult) {
		if *asJSON {
			if err := enc.Encode(r); err != nil && encErr == nil {
				encErr = err
			}
			return
		}
		fmt.Fprintf(stdout, "%-24s %-22s %7d %9.2f %12.0f %14.3g %14.3g %12.0f\n", r.Graph, r.Sampler, r.Threads, r.SetupSeconds,
			r.SeedsPerSecond, r.EdgesPerSecond, r.EdgesPerSecondPerThread, r.InputNodes)
	})
	if err != nil {
		return err
	}
	return encErr
}
