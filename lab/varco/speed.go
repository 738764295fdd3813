package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// speedCmd measures the speed checks: the median epoch time of
// plain single-process training (fullgraph.New + Run, the training
// issue's path), of the same through RunInProcess with one worker, and of
// N in-process workers without compression; and each codec's share of the
// epoch. Variants are interleaved and repeated so that load from other
// processes falls on all of them alike.
func speedCmd(args []string) error {
	fs := flag.NewFlagSet("speed", flag.ExitOnError)
	name := fs.String("dataset", "amazon-computers", "dataset")
	epochs := fs.Int("epochs", 8, "epochs per measurement")
	hidden := fs.Int("hidden", 64, "hidden width")
	parts := fs.Int("parts", 4, "workers of the partitioned run")
	method := fs.String("partition", "random", "how the partitioned run splits the graph (random has the most halo rows)")
	reps := fs.Int("reps", 2, "repetitions of the N = 1 and N = 4 epoch-time checks (0 skips them; -codec-reps repeats the codec shares)")
	codecs := fs.String("codecs", "truncate:fixed:2,truncate:fixed:128,quant8:fixed:1,quant4:fixed:1,subspace:fixed:2,topk:fixed:8", "codec:schedule pairs whose codec share to measure (none is measured too, as the baseline of their epoch times)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the codec runs to FILE")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the codec runs to FILE")
	codecReps := fs.Int("codec-reps", 3, "rounds of the codec-share measurements")
	fs.Parse(args)
	p, classes, err := loadProblem(*name, "frac:0.6:0.2", dataset.ResolveDataDir(""))
	if err != nil {
		return err
	}
	layout, err := buildLayout(p, *parts, *method)
	if err != nil {
		return err
	}
	cfg := train.Config{
		Model:     nn.Config{Model: "sage", Hidden: *hidden, Classes: classes, Layers: 3, Seed: 1},
		Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01},
		Epochs:    *epochs,
	}
	ctx := context.Background()
	link, _ := comm.ParseLink("1gbit:1ms")
	plain := func() ([]float64, error) {
		tr, err := fullgraph.New(cfg, fullgraph.Data{Block: nn.WholeGraph(p.Graph), Features: p.Features, Labels: p.Labels, Train: p.Train, Val: p.Val, Test: p.Test}, nil)
		if err != nil {
			return nil, err
		}
		res, err := tr.Run(ctx, train.Hooks{})
		return res.EpochSeconds, err
	}
	// dist returns the epoch times and the codec's share of the epochs
	// after the first (which allocates the buffers).
	dist := func(l *partition.Layout, codec, sched string) ([]float64, float64, error) {
		rec := record{Codec: codec, Schedule: sched, Epochs: *epochs, Hidden: *hidden, Seed: 1}
		if err := run(ctx, &rec, p, classes, l, link); err != nil {
			return nil, 0, err
		}
		var wall, inCodec float64
		for i := 1; i < len(rec.EpochSec); i++ {
			wall += rec.EpochSec[i]
			inCodec += rec.CodecSec[i]
		}
		return rec.EpochSec, inCodec / wall, nil
	}
	var a, b, c []float64
	for range *reps {
		if *reps == 0 {
			break
		}
		x, err := plain()
		if err != nil {
			return err
		}
		a = append(a, x[1:]...) // the first epoch warms caches and allocates
		y, _, err := dist(nil, "none", "fixed:1")
		if err != nil {
			return err
		}
		b = append(b, y[1:]...)
		z, share, err := dist(layout, "none", "fixed:1")
		if err != nil {
			return err
		}
		c = append(c, z[1:]...)
		fmt.Fprintf(os.Stderr, "rep: plain %.3fs, N=1 %.3fs, N=%d %.3fs (codec %.1f%%)\n", stats.Median(x[1:]), stats.Median(y[1:]), *parts, stats.Median(z[1:]), 100*share)
	}
	fmt.Printf("%s, SAGE-%d, %s partition, median epoch over %d epochs x %d reps:\n", *name, *hidden, *method, *epochs-1, *reps)
	if *reps > 0 {
		ma, mb, mc := stats.Median(a), stats.Median(b), stats.Median(c)
		fmt.Printf("  single-process (fullgraph.New+Run)   %.3f s\n", ma)
		fmt.Printf("  N = 1 (RunInProcess)                 %.3f s  (%.3fx; target within 5%%)\n", mb, mb/ma)
		fmt.Printf("  N = %d in-process, --compress none    %.3f s  (%.3fx of N = 1; target within 1.3x)\n", *parts, mc, mc/mb)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// The codecs are measured in turn, codecReps rounds, so that load from
	// elsewhere falls on all of them alike; the median share is reported.
	// So is each codec's epoch against none's at the same N (the median
	// over rounds of the ratio within a round): the time inside the codec
	// includes moving bytes that an uncompressed exchange moves too, outside
	// any codec, so the two together say what compression costs.
	list := splitList(*codecs)
	base := slices.IndexFunc(list, func(cs string) bool { return strings.HasPrefix(cs+":", "none:") })
	if base < 0 {
		list, base = append([]string{"none:fixed:1"}, list...), 0
	}
	epochTimes := make([][]float64, len(list))
	shares := make([][]float64, len(list))
	vsNone := make([][]float64, len(list)) // per round, median epoch over none's
	for range max(*codecReps, 1) {
		round := make([]float64, len(list))
		for i, cs := range list {
			codec, sched, _ := strings.Cut(cs, ":")
			ep, share, err := dist(layout, codec, sched)
			if err != nil {
				return err
			}
			epochTimes[i] = append(epochTimes[i], ep[1:]...)
			shares[i] = append(shares[i], share)
			round[i] = stats.Median(ep[1:])
		}
		for i := range list {
			vsNone[i] = append(vsNone[i], round[i]/round[base])
		}
	}
	for i, cs := range list {
		if i == base {
			fmt.Printf("  N = %d %-22s epoch %.3f s (the baseline of the epoch ratios)\n", *parts, cs, stats.Median(epochTimes[i]))
			continue
		}
		fmt.Printf("  N = %d %-22s epoch %.3f s (%.3fx none's), codec %.1f%% of the epoch (median of %d; range %.1f–%.1f%%; target < 10%%)\n",
			*parts, cs, stats.Median(epochTimes[i]), stats.Median(vsNone[i]),
			100*stats.Median(shares[i]), len(shares[i]), 100*slices.Min(shares[i]), 100*slices.Max(shares[i]))
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}
	return nil
}
