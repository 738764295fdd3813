package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: varco run|report|speed [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "report":
		err = reportCmd(os.Args[2:])
	case "speed":
		err = speedCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want run, report or speed)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "varco:", err)
		os.Exit(1)
	}
}

// config is one communication setting: a compressor and a schedule.
type config struct {
	Name, Codec, Schedule string
}

// specConfig is the configuration named by a codec spec with parameters,
// CODEC[@SCHEDULE][+last]: that codec under SCHEDULE (fixed:1 if none),
// compressing the last layer's exchange too with +last.
func specConfig(name string) config {
	spec, _ := strings.CutSuffix(name, "+last")
	codec, sched, found := strings.Cut(spec, "@")
	if !found {
		sched = "fixed:1"
	}
	return config{Name: name, Codec: codec, Schedule: sched}
}

// last reports whether the configuration compresses the last layer's
// exchange too: its name ends in +last.
func (c config) last() bool { return strings.HasSuffix(c.Name, "+last") }

// configs lists every configuration the sweep knows, by name. fixed-R are
// the authors' truncation at a fixed ratio; varco is their linear schedule
// as shipped (floor 1.5), varco-r1 the same reaching r = 1 as their theory
// asks; the rest are graft's other compressors and schedules.
var configs = []config{
	{"full", "none", "fixed:1"},
	{"fixed-2", "truncate", "fixed:2"},
	{"fixed-4", "truncate", "fixed:4"},
	{"fixed-8", "truncate", "fixed:8"},
	{"fixed-16", "truncate", "fixed:16"},
	{"fixed-32", "truncate", "fixed:32"},
	{"fixed-64", "truncate", "fixed:64"},
	{"fixed-128", "truncate", "fixed:128"},
	{"varco", "truncate", "linear:128:1.5:5"},
	{"varco-r1", "truncate", "linear:128:1:5"},
	{"exp", "truncate", "exp:128:1:5"},
	{"adaptive", "truncate", "adaptive:128:1:5:2"},
	{"step", "truncate", "step:128:1:3"}, // SAR's staircase, halving every 3 steps: r = 1 from step 21
	{"subspace-linear", "subspace", "linear:128:1:5"},
	{"topk-linear", "topk", "linear:128:1:5"},
	{"topk-exp", "topk", "exp:128:1:5"},
	{"subspace-exp", "subspace", "exp:128:1:5"},
	{"subspace-linear4", "subspace", "linear:4:1:5"},
	// milder subspace schedules, measured against its default
	// (docs/varco-detail.md, "Subspace's default"; scripts/subspace.sh)
	{"subspace-linear2", "subspace", "linear:2:1:5"},
	{"subspace-linear1.25", "subspace", "linear:1.25:1:5"},
	{"subspace-linear4-10", "subspace", "linear:4:1:10"}, // r = 1 from iteration 10
	{"bf16", "bf16", "fixed:1"},
	{"quant8", "quant8", "fixed:1"},
	{"quant4", "quant4", "fixed:1"},
	{"quant2", "quant2", "fixed:1"},
	{"quant1", "quant1", "fixed:1"},
}

func configByName(name string) (config, bool) {
	for _, c := range configs {
		if c.Name == name {
			return c, true
		}
	}
	return config{}, false
}

// record is one run: its cell, its configuration, the final figures and
// the per-epoch curves.
type record struct {
	Dataset   string `json:"dataset"`
	Parts     int    `json:"parts"`
	Partition string `json:"partition"`
	Seed      uint64 `json:"seed"`
	Config    string `json:"config"`
	Codec     string `json:"codec"` // (records written before the per-epoch field was renamed lack it)
	Schedule  string `json:"schedule"`
	Last      bool   `json:"compress_last,omitempty"` // the last layer's exchange compressed too
	Epochs    int    `json:"epochs"`
	Hidden    int    `json:"hidden"`

	BestEpoch int     `json:"best_epoch"`
	TestAcc   float64 `json:"test_acc"` // at the best validation epoch
	ValAcc    float64 `json:"val_acc"`
	HaloBytes int64   `json:"halo_bytes"` // forward + backward, all epochs, all workers
	GradBytes int64   `json:"grad_bytes"`
	Emulated  float64 `json:"emulated_seconds"`
	Wall      float64 `json:"wall_seconds"`
	Codec_    float64 `json:"codec_seconds"`
	EpochSecs float64 `json:"epoch_seconds_median"`

	// Per epoch.
	Ratio    []float64 `json:"ratio"`
	Val      []float64 `json:"val"`
	Test     []float64 `json:"test"`
	Loss     []float64 `json:"loss"`
	Fwd      []int64   `json:"fwd"`
	Bwd      []int64   `json:"bwd"`
	Grad     []int64   `json:"grad"`
	EmuSecs  []float64 `json:"emulated"`
	EpochSec []float64 `json:"epoch_seconds"`
	CodecSec []float64 `json:"codec_per_epoch"`
}

func (r record) key() string {
	return fmt.Sprintf("%s/%d/%s/%d/%s/%d/%d", r.Dataset, r.Parts, r.Partition, r.Seed, r.Config, r.Epochs, r.Hidden)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// sweep is what varco run was asked to run.
type sweep struct {
	datasets, partitions []string
	parts                []int
	seeds                []uint64
	configs              []config
	epochs, hidden       int
	split, dataDir, out  string
	link                 comm.Link
	stopAt               string
	deadline             time.Time // zero: none
}

// errStopAt stops a sweep at its -stop-at time; it is not a failure.
var errStopAt = errors.New("stop-at reached")

func runCmd(args []string) error {
	s, err := parseSweep(args)
	if err != nil {
		return err
	}
	res, err := openResults(s.out)
	if err != nil {
		return err
	}
	defer res.f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, name := range s.datasets {
		prob, classes, err := loadProblem(name, s.split, dataset.ResolveDataDir(s.dataDir))
		if err != nil {
			return err
		}
		for _, k := range s.parts {
			for _, method := range s.partitions {
				err := s.runLayout(ctx, res, name, prob, classes, k, method)
				if errors.Is(err, errStopAt) {
					return nil
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func parseSweep(args []string) (*sweep, error) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	datasets := fs.String("datasets", "amazon-computers,coauthor-cs", "datasets (registry names, or sbm-arxiv for the synthetic ogbn-arxiv-sized graph)")
	partsFlag := fs.String("parts", "4,8", "worker counts")
	partitions := fs.String("partitions", "random,multilevel", "partitioners")
	seedsFlag := fs.String("seeds", "1,2,3", "seeds (model initialisation; the split and partition use seed 1)")
	cfgFlag := fs.String("configs", "all", "configurations, comma-separated, or all; a codec spec with parameters, CODEC[@SCHEDULE][+last] (delta:2:0.05:8, delta:r@step:16:4:34:2+last), runs that codec under SCHEDULE (default fixed:1), with +last compressing the last layer's exchange too")
	s := &sweep{}
	fs.IntVar(&s.epochs, "epochs", 300, "full-batch iterations (the authors: 300)")
	fs.IntVar(&s.hidden, "hidden", 256, "hidden width (the authors: 256)")
	fs.StringVar(&s.split, "split", "frac:0.6:0.2", "split of the registry datasets")
	link := fs.String("link", "1gbit:1ms", "emulated link per worker")
	fs.StringVar(&s.out, "out", "docs/varco/results.jsonl", "results file (appended; runs already in it are skipped)")
	fs.StringVar(&s.dataDir, "data-dir", "", "data directory (default $GRAFT_DATA)")
	fs.StringVar(&s.stopAt, "stop-at", "", "wall-clock time HH:MM (local) after which no new run starts; runs under way finish")
	fs.Parse(args)
	s.datasets, s.partitions = splitList(*datasets), splitList(*partitions)
	var err error
	if s.deadline, err = nextClockTime(s.stopAt); err != nil {
		return nil, fmt.Errorf("-stop-at: %w", err)
	}
	if s.configs, err = pickConfigs(*cfgFlag); err != nil {
		return nil, err
	}
	for _, f := range splitList(*partsFlag) {
		k, err := strconv.Atoi(f)
		if err != nil || k < 1 {
			return nil, fmt.Errorf("-parts: %q", f)
		}
		s.parts = append(s.parts, k)
	}
	for _, f := range splitList(*seedsFlag) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-seeds: %q", f)
		}
		s.seeds = append(s.seeds, v)
	}
	if s.link, err = comm.ParseLink(*link); err != nil {
		return nil, err
	}
	return s, nil
}

// nextClockTime is the next time the local clock shows hhmm ("HH:MM"),
// or up to 12 hours ago; zero for "".
func nextClockTime(hhmm string) (time.Time, error) {
	if hhmm == "" {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("15:04", hhmm, time.Local)
	if err != nil {
		return time.Time{}, err
	}
	now := time.Now()
	at := time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), 0, 0, time.Local)
	if at.Before(now.Add(-12 * time.Hour)) {
		at = at.AddDate(0, 0, 1) // a time past midnight
	}
	return at, nil
}

// pickConfigs returns the configurations named in list, or all of them.
func pickConfigs(list string) ([]config, error) {
	if list == "all" {
		return configs, nil
	}
	var cfgs []config
	for _, n := range splitList(list) {
		c, ok := configByName(n)
		if !ok && strings.Contains(n, ":") {
			c = specConfig(n)
			_, err := compress.Factory(c.Codec)
			_, serr := compress.ParseSchedule(c.Schedule, 100)
			ok = err == nil && serr == nil
		}
		if !ok {
			return nil, fmt.Errorf("unknown configuration %q", n)
		}
		cfgs = append(cfgs, c)
	}
	return cfgs, nil
}

// results is the results file: the runs already in it, and where new ones
// are appended.
type results struct {
	done map[string]bool // by record key
	f    *os.File
	enc  *json.Encoder
}

func openResults(path string) (*results, error) {
	done := map[string]bool{}
	if old, err := readRecords(path); err == nil {
		for _, r := range old {
			done[r.key()] = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &results{done: done, f: f, enc: json.NewEncoder(f)}, nil
}

// runLayout runs every seed and configuration not yet in res on dataset
// name split into k parts by method, building the layout when the first
// run needs it. It returns errStopAt once the deadline has passed.
func (s *sweep) runLayout(ctx context.Context, res *results, name string, prob train.Problem, classes, k int, method string) error {
	var layout *partition.Layout
	for _, seed := range s.seeds {
		for _, c := range s.configs {
			rec := record{Dataset: name, Parts: k, Partition: method, Seed: seed, Config: c.Name,
				Codec: c.Codec, Schedule: c.Schedule, Last: c.last(), Epochs: s.epochs, Hidden: s.hidden}
			if res.done[rec.key()] {
				continue
			}
			if !s.deadline.IsZero() && time.Now().After(s.deadline) {
				fmt.Fprintf(os.Stderr, "stop-at %s reached; %s and later runs not started\n", s.stopAt, rec.key())
				return errStopAt
			}
			if layout == nil && k > 1 {
				start := time.Now()
				var err error
				if layout, err = buildLayout(prob, k, method); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "%s: %d-part %s layout in %.1fs\n", name, k, method, time.Since(start).Seconds())
			}
			if err := run(ctx, &rec, prob, classes, layout, s.link); err != nil {
				return fmt.Errorf("%s: %w", rec.key(), err)
			}
			if err := res.enc.Encode(rec); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%-60s test %.4f  halo %.3g B  %.0fs (codec %.1f%%)\n", rec.key(), rec.TestAcc,
				float64(rec.HaloBytes), rec.Wall, 100*rec.Codec_/rec.Wall)
		}
	}
	return nil
}

// loadProblem reads a registry dataset (row-normalised features, seeded
// split) or generates sbm-arxiv.
func loadProblem(name, split, dataDir string) (train.Problem, int, error) {
	if name == "sbm-arxiv" {
		return sbmArxiv()
	}
	ds, err := dataset.Load(name, dataDir)
	if err != nil {
		return train.Problem{}, 0, err
	}
	s, err := ds.Split(split, 1)
	if err != nil {
		return train.Problem{}, 0, err
	}
	d, err := fullgraph.FromDataset(ds, s, nn.Auto, true)
	if err != nil {
		return train.Problem{}, 0, err
	}
	return train.Problem{Graph: ds.Graph, Features: d.Features, Labels: d.Labels, Train: d.Train, Val: d.Val, Test: d.Test}, ds.NumClasses, nil
}

// sbmArxiv is a stochastic block model the size of ogbn-arxiv: 169,343
// nodes, about 1.17M undirected edges, 128 features, 40 classes, with
// ogbn-arxiv's split fractions (54/18/28) drawn at random.
func sbmArxiv() (train.Problem, int, error) {
	const n, classes = 169343, 40
	g, x, labels, err := graph.SBM(graph.SBMConfig{Nodes: n, Classes: classes, AvgDegree: 13.8, Homophily: 0.6,
		Features: 128, FeatureNoise: 1.5}, 1)
	if err != nil {
		return train.Problem{}, 0, err
	}
	p := train.Problem{Graph: g, Features: nn.DenseFeatures(x), Labels: labels}
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	rng := uint64(12345)
	for i := n - 1; i > 0; i-- { // Fisher–Yates with splitmix64
		rng += 0x9e3779b97f4a7c15
		z := rng
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		j := int(z % uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	nt, nv := n*54/100, n*18/100
	p.Train, p.Val, p.Test = perm[:nt], perm[nt:nt+nv], perm[nt+nv:]
	return p, classes, nil
}

// buildLayout splits the graph with training nodes balanced too, as graft
// train does (and DGL's balance_ntypes).
func buildLayout(p train.Problem, k int, method string) (*partition.Layout, error) {
	pt, err := partition.New(method)
	if err != nil {
		return nil, err
	}
	balance := make([]int32, p.Graph.N)
	for _, v := range p.Train {
		balance[v] = 1
	}
	parts, err := pt.Partition(p.Graph, k, partition.Options{Seed: 1, Balance: balance})
	if err != nil {
		return nil, err
	}
	return partition.BuildLayout(p.Graph, parts, k)
}

// run trains rec's configuration: the authors' model (3-layer SAGE-mean,
// ReLU, no dropout, Adam lr 0.01, no weight decay, every iteration).
func run(ctx context.Context, rec *record, p train.Problem, classes int, layout *partition.Layout, link comm.Link) error {
	sched, err := compress.ScheduleFactory(rec.Schedule, rec.Epochs)
	if err != nil {
		return err
	}
	codec, err := compress.Factory(rec.Codec)
	if err != nil {
		return err
	}
	cfg := train.Config{
		Model:     nn.Config{Model: "sage", Hidden: rec.Hidden, Classes: classes, Layers: 3, Seed: rec.Seed},
		Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01},
		Epochs:    rec.Epochs,
	}
	start := time.Now()
	res, _, err := fullgraph.RunInProcess(ctx, cfg, p, layout, fullgraph.Options{Codec: codec, Schedule: sched, CompressLast: rec.Last, Link: &link},
		func(m metrics.Epoch) error {
			rec.Ratio = append(rec.Ratio, m.Ratio)
			rec.Val = append(rec.Val, m.ValAcc)
			rec.Test = append(rec.Test, m.TestAcc)
			rec.Loss = append(rec.Loss, m.Loss)
			rec.Fwd = append(rec.Fwd, m.BytesFwd)
			rec.Bwd = append(rec.Bwd, m.BytesBwd)
			rec.Grad = append(rec.Grad, m.BytesGrad)
			rec.EmuSecs = append(rec.EmuSecs, m.EmulatedSeconds)
			rec.EpochSec = append(rec.EpochSec, m.EpochSeconds)
			rec.CodecSec = append(rec.CodecSec, m.CodecSeconds)
			rec.HaloBytes += m.BytesFwd + m.BytesBwd
			rec.GradBytes += m.BytesGrad
			rec.Emulated += m.EmulatedSeconds
			rec.Codec_ += m.CodecSeconds
			return nil
		})
	if err != nil {
		return err
	}
	rec.Wall = time.Since(start).Seconds()
	rec.BestEpoch, rec.TestAcc, rec.ValAcc = res.Best.Epoch, res.Best.TestAcc, res.Best.ValAcc
	rec.EpochSecs = stats.Median(res.EpochSeconds)
	return nil
}

func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
