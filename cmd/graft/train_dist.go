package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// distOptions are graft train's flags for partition-parallel training.
type distOptions struct {
	parts           int
	partition       string
	codec, schedule string
	scheduleName    string // the schedule in force, resolved from --schedule and its default
	link            string
	partitionSeed   uint64
	checkpointDir   string
	checkpointEvery int
	resume          string
}

func (d *distOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&d.parts, "parts", 1, "workers, each holding one part of the graph: in-process goroutines, or the processes of a multi-process job (--rank/--world or a launcher's environment; it must then equal the world size)")
	fs.StringVar(&d.partition, "partition", "random", "how to split the graph: "+strings.Join(partition.Methods(), ", ")+", or an assignment FILE (one part id per line, as gpmetis writes)")
	fs.StringVar(&d.codec, "compress", "none", "compression of the boundary exchange: "+strings.Join(compress.Names(), ", "))
	fs.StringVar(&d.schedule, "schedule", "", "compression ratio per step: fixed:R, linear:RMAX:RMIN:SLOPE, exp:RMAX:RMIN[:SLOPE], step:RMAX:RMIN:EVERY[:FACTOR] or adaptive[:RMAX:RMIN:PATIENCE:FACTOR] (default fixed:1, or linear:128:1.5:5 when --compress is truncate, subspace or topk)")
	fs.StringVar(&d.link, "link", "", "emulate a network link per worker, e.g. 1gbit:1ms, to report emulated time")
	fs.Uint64Var(&d.partitionSeed, "partition-seed", 1, "seed of the partitioner")
	fs.StringVar(&d.checkpointDir, "checkpoint-dir", "", "write checkpoints to `DIR` (every --checkpoint-every epochs, and when interrupted by SIGINT or SIGTERM)")
	fs.IntVar(&d.checkpointEvery, "checkpoint-every", 10, "epochs between checkpoints when --checkpoint-dir is set (0: only when interrupted)")
	fs.StringVar(&d.resume, "resume", "", "continue the run checkpointed in `DIR` (the newest checkpoint that verifies); it keeps checkpointing there unless --checkpoint-dir says otherwise")
}

// checkpoints sets up saving and resuming. With deferResume (a
// multi-process job) the checkpoint is not read here: rank 0 reads it once
// the workers are connected and sends it to the others (train_worker.go).
func (d *distOptions) checkpoints(opts *fullgraph.Options, stderr io.Writer, deferResume bool) error {
	if d.checkpointEvery < 0 {
		return usageError{fmt.Errorf("--checkpoint-every %d: want 0 or more", d.checkpointEvery)}
	}
	if d.resume != "" && deferResume {
		if d.checkpointDir == "" {
			d.checkpointDir = d.resume
		}
	} else if d.resume != "" {
		st, path, err := checkpoint.LoadLatest(d.resume, func(w string) { fmt.Fprintf(stderr, "graft train: %s\n", w) })
		if err != nil {
			return fmt.Errorf("--resume: %v", err)
		}
		fmt.Fprintf(stderr, "resuming from %s (after epoch %d)\n", path, st.Step)
		opts.Resume = st
		if d.checkpointDir == "" {
			d.checkpointDir = d.resume
		}
	}
	if d.checkpointDir != "" {
		dir := d.checkpointDir
		opts.CheckpointEvery = d.checkpointEvery
		opts.SaveCheckpoint = func(st *checkpoint.State) error {
			_, err := checkpoint.Save(dir, st, 3)
			return err
		}
	}
	return nil
}

// prepare checks the flags and splits g; it returns a nil layout for one part.
func (d *distOptions) prepare(g *graph.Graph, train []int32, epochs int) (*partition.Layout, fullgraph.Options, error) {
	if d.parts > g.N && d.parts >= 1 {
		return nil, fullgraph.Options{}, usageError{fmt.Errorf("--parts %d: the graph has only %d nodes", d.parts, g.N)}
	}
	opts, err := d.options(epochs)
	if err != nil {
		return nil, opts, err
	}
	if d.parts == 1 {
		return nil, opts, nil
	}
	parts, err := d.assign(g, train)
	if err != nil {
		return nil, opts, err
	}
	layout, err := partition.BuildLayout(g, parts, d.parts)
	if err != nil {
		return nil, opts, err
	}
	return layout, opts, nil
}

// unusedWithOneWorker names the communication flags set for a run of one
// part, where they do nothing, or returns "".
func (d *distOptions) unusedWithOneWorker() string {
	if d.parts != 1 {
		return ""
	}
	var set []string
	if d.codec != "none" {
		set = append(set, "--compress "+d.codec)
	}
	if d.schedule != "" {
		set = append(set, "--schedule "+d.schedule)
	}
	if d.link != "" {
		set = append(set, "--link "+d.link)
	}
	return strings.Join(set, " and ")
}

// options checks the communication flags.
func (d *distOptions) options(epochs int) (fullgraph.Options, error) {
	var opts fullgraph.Options
	if d.parts < 1 {
		return opts, usageError{fmt.Errorf("--parts %d: want at least 1", d.parts)}
	}
	codec, err := compress.Factory(d.codec)
	if err != nil {
		return opts, usageError{fmt.Errorf("--compress: %v", err)}
	}
	spec := d.schedule
	if spec == "" {
		spec = "fixed:1"
		if d.codec == "truncate" || d.codec == "subspace" || d.codec == "topk" {
			spec = "linear:128:1.5:5" // the VARCO authors' schedule
		}
	}
	sched, err := compress.ParseSchedule(spec, epochs)
	if err != nil {
		return opts, usageError{err}
	}
	d.scheduleName = sched.String()
	opts.Schedule, _ = compress.ScheduleFactory(spec, epochs)
	opts.Codec = codec
	if d.link != "" {
		l, err := comm.ParseLink(d.link)
		if err != nil {
			return opts, usageError{fmt.Errorf("--link: %v", err)}
		}
		opts.Link = &l
	}
	return opts, nil
}

func (d *distOptions) assign(g *graph.Graph, train []int32) ([]int32, error) {
	if slices.Contains(partition.Methods(), d.partition) || d.partition == "metis" {
		p, err := partition.New(d.partition)
		if err != nil {
			return nil, err
		}
		// Balance training nodes too, as DGL's balance_ntypes does, so every
		// worker has a similar share of the loss.
		balance := make([]int32, g.N)
		for _, v := range train {
			balance[v] = 1
		}
		return p.Partition(g, d.parts, partition.Options{Seed: d.partitionSeed, Balance: balance})
	}
	f, err := os.Open(d.partition)
	if err != nil {
		return nil, usageError{fmt.Errorf("--partition %q is neither a method (%s) nor a readable assignment file", d.partition, strings.Join(partition.Methods(), ", "))}
	}
	defer f.Close()
	parts, _, err := partition.ReadAssignment(f, g.N, d.parts)
	if err != nil {
		return nil, fmt.Errorf("assignment %s: %v", d.partition, err)
	}
	return parts, nil
}

// fill copies the run's totals into the summary; imbalance is the
// slowest worker's compute time over the mean.
func (d *distOptions) fill(s *trainSummary, t metrics.Totals) {
	s.Parts, s.Compress, s.Schedule = d.parts, d.codec, d.scheduleName
	if d.parts > 1 {
		s.Partition = d.partition
	}
	s.BytesFwd, s.BytesBwd, s.BytesGrad = t.BytesFwd, t.BytesBwd, t.BytesGrad
	s.BytesTotal = t.BytesTotal()
	s.ComputeSeconds, s.CommSeconds, s.CodecSeconds, s.EmulatedSeconds = t.ComputeSeconds, t.CommSeconds, t.CodecSeconds, t.EmulatedSeconds
	s.WorkerImbalance = t.WorkerImbalance()
}
