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
	opt := parseSpeedFlags(args)
	b, err := newSpeedBench(opt)
	if err != nil {
		return err
	}
	if err := b.compareEpochTimes(opt.reps); err != nil {
		return err
	}
	if opt.cpuProfile != "" {
		stop, err := startCPUProfile(opt.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := b.compareCodecs(splitList(opt.codecs), max(opt.codecReps, 1)); err != nil {
		return err
	}
	if opt.memProfile != "" {
		return writeAllocProfile(opt.memProfile)
	}
	return nil
}

// speedFlags is what varco speed was asked to measure.
type speedFlags struct {
	dataset, method        string
	epochs, hidden, parts  int
	reps, codecReps        int
	codecs                 string
	cpuProfile, memProfile string
}

func parseSpeedFlags(args []string) *speedFlags {
	fs := flag.NewFlagSet("speed", flag.ExitOnError)
	opt := &speedFlags{}
	fs.StringVar(&opt.dataset, "dataset", "amazon-computers", "dataset")
	fs.IntVar(&opt.epochs, "epochs", 8, "epochs per measurement")
	fs.IntVar(&opt.hidden, "hidden", 64, "hidden width")
	fs.IntVar(&opt.parts, "parts", 4, "workers of the partitioned run")
	fs.StringVar(&opt.method, "partition", "random", "how the partitioned run splits the graph (random has the most halo rows)")
	fs.IntVar(&opt.reps, "reps", 2, "repetitions of the N = 1 and N = 4 epoch-time checks (0 skips them; -codec-reps repeats the codec shares)")
	fs.StringVar(&opt.codecs, "codecs", "truncate:fixed:2,truncate:fixed:128,quant8:fixed:1,quant4:fixed:1,subspace:fixed:2,topk:fixed:8", "codec:schedule pairs whose codec share to measure (none is measured too, as the baseline of their epoch times)")
	fs.StringVar(&opt.cpuProfile, "cpuprofile", "", "write a CPU profile of the codec runs to FILE")
	fs.StringVar(&opt.memProfile, "memprofile", "", "write an allocation profile of the codec runs to FILE")
	fs.IntVar(&opt.codecReps, "codec-reps", 3, "rounds of the codec-share measurements")
	fs.Parse(args)
	return opt
}

// speedBench is the problem, its layout and the model every speed
// measurement trains.
type speedBench struct {
	opt     *speedFlags
	p       train.Problem
	classes int
	layout  *partition.Layout
	cfg     train.Config
	link    comm.Link
}

func newSpeedBench(opt *speedFlags) (*speedBench, error) {
	p, classes, err := loadProblem(opt.dataset, "frac:0.6:0.2", dataset.ResolveDataDir(""))
	if err != nil {
		return nil, err
	}
	layout, err := buildLayout(p, opt.parts, opt.method)
	if err != nil {
		return nil, err
	}
	cfg := train.Config{
		Model:     nn.Config{Model: "sage", Hidden: opt.hidden, Classes: classes, Layers: 3, Seed: 1},
		Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01},
		Epochs:    opt.epochs,
	}
	link, _ := comm.ParseLink("1gbit:1ms")
	return &speedBench{opt: opt, p: p, classes: classes, layout: layout, cfg: cfg, link: link}, nil
}

// plain returns the epoch times of single-process training.
func (b *speedBench) plain() ([]float64, error) {
	p := b.p
	tr, err := fullgraph.New(b.cfg, fullgraph.Data{Block: nn.WholeGraph(p.Graph), Features: p.Features, Labels: p.Labels, Train: p.Train, Val: p.Val, Test: p.Test}, nil)
	if err != nil {
		return nil, err
	}
	res, err := tr.Run(context.Background(), train.Hooks{})
	return res.EpochSeconds, err
}

// dist returns the epoch times of in-process workers on layout l (one
// worker if nil) and the codec's share of the epochs after the first
// (which allocates the buffers).
func (b *speedBench) dist(l *partition.Layout, codec, sched string) ([]float64, float64, error) {
	rec := record{Codec: codec, Schedule: sched, Epochs: b.opt.epochs, Hidden: b.opt.hidden, Seed: 1}
	if err := run(context.Background(), &rec, b.p, b.classes, l, b.link); err != nil {
		return nil, 0, err
	}
	var wall, inCodec float64
	for i := 1; i < len(rec.EpochSec); i++ {
		wall += rec.EpochSec[i]
		inCodec += rec.CodecSec[i]
	}
	return rec.EpochSec, inCodec / wall, nil
}

// compareEpochTimes measures plain training, one worker and the
// partitioned run in turn, reps times, and prints their median epochs
// against each other.
func (b *speedBench) compareEpochTimes(reps int) error {
	var plain, one, parts []float64 // epochs after the first, over reps
	for range reps {
		x, err := b.plain()
		if err != nil {
			return err
		}
		plain = append(plain, x[1:]...) // the first epoch warms caches and allocates
		y, _, err := b.dist(nil, "none", "fixed:1")
		if err != nil {
			return err
		}
		one = append(one, y[1:]...)
		z, share, err := b.dist(b.layout, "none", "fixed:1")
		if err != nil {
			return err
		}
		parts = append(parts, z[1:]...)
		fmt.Fprintf(os.Stderr, "rep: plain %.3fs, N=1 %.3fs, N=%d %.3fs (codec %.1f%%)\n", stats.Median(x[1:]), stats.Median(y[1:]), b.opt.parts, stats.Median(z[1:]), 100*share)
	}
	opt := b.opt
	fmt.Printf("%s, SAGE-%d, %s partition, median epoch over %d epochs x %d reps:\n", opt.dataset, opt.hidden, opt.method, opt.epochs-1, reps)
	if reps > 0 {
		ma, mb, mc := stats.Median(plain), stats.Median(one), stats.Median(parts)
		fmt.Printf("  single-process (fullgraph.New+Run)   %.3f s\n", ma)
		fmt.Printf("  N = 1 (RunInProcess)                 %.3f s  (%.3fx; target within 5%%)\n", mb, mb/ma)
		fmt.Printf("  N = %d in-process, --compress none    %.3f s  (%.3fx of N = 1; target within 1.3x)\n", opt.parts, mc, mc/mb)
	}
	return nil
}

// compareCodecs measures the codecs of list (codec:schedule pairs) in
// turn, rounds times, so that load from elsewhere falls on all of them
// alike, and prints each one's median share of the epoch and its epoch
// against none's at the same N (the median over rounds of the ratio within
// a round): the time inside the codec includes moving bytes that an
// uncompressed exchange moves too, outside any codec, so the two together
// say what compression costs.
func (b *speedBench) compareCodecs(list []string, rounds int) error {
	base := slices.IndexFunc(list, func(cs string) bool { return strings.HasPrefix(cs+":", "none:") })
	if base < 0 {
		list, base = append([]string{"none:fixed:1"}, list...), 0
	}
	epochTimes := make([][]float64, len(list))
	shares := make([][]float64, len(list))
	vsNone := make([][]float64, len(list)) // per round, median epoch over none's
	for range rounds {
		round := make([]float64, len(list))
		for i, cs := range list {
			codec, sched, _ := strings.Cut(cs, ":")
			ep, share, err := b.dist(b.layout, codec, sched)
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
			fmt.Printf("  N = %d %-22s epoch %.3f s (the baseline of the epoch ratios)\n", b.opt.parts, cs, stats.Median(epochTimes[i]))
			continue
		}
		fmt.Printf("  N = %d %-22s epoch %.3f s (%.3fx none's), codec %.1f%% of the epoch (median of %d; range %.1f–%.1f%%; target < 10%%)\n",
			b.opt.parts, cs, stats.Median(epochTimes[i]), stats.Median(vsNone[i]),
			100*stats.Median(shares[i]), len(shares[i]), 100*slices.Min(shares[i]), 100*slices.Max(shares[i]))
	}
	return nil
}

// startCPUProfile profiles the CPU into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeAllocProfile writes the allocations so far to path.
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
