package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/job"
	"github.com/graft-gnn/graft/partition"
)

// distOptions are graft train's flags for partition-parallel training.
type distOptions struct {
	parts           int
	partition       string
	codec, schedule string
	compressLast    bool
	evalCompress    string
	scheduleName    string // the schedule in force, resolved from --schedule and its default
	link            string
	gradCompress    string
	partitionSeed   uint64
	checkpointDir   string
	checkpointEvery int
	resume          string
	resumeAllow     string
	rebalance       rebalanceValue
}

func (d *distOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&d.parts, "parts", 1, "workers, each holding one part of the graph: in-process goroutines, or the processes of a multi-process job (--rank/--world or a launcher's environment; it must then equal the world size)")
	fs.StringVar(&d.partition, "partition", "random", "how to split the graph: "+strings.Join(partition.Methods(), ", ")+", or an assignment FILE (one part id per line, as gpmetis writes)")
	fs.StringVar(&d.codec, "compress", "none", "compression of the boundary exchange: "+strings.Join(compress.Usage(), ", ")+
		", or auto ("+compress.AutoCodec(false)+" with --compress-last, graft's recipe; also what --schedule or --compress-last alone select over several parts)")
	fs.StringVar(&d.schedule, "schedule", "", "compression ratio per step: fixed:R, linear:RMAX:RMIN:SLOPE, exp:RMAX:RMIN[:SLOPE], step:RMAX:RMIN:EVERY[:FACTOR], adaptive[:RMAX:RMIN:PATIENCE:FACTOR], or varco-paper (the VARCO authors' linear:128:1.5:5); patience and model selection start once it reaches its final ratio (default per codec: truncate "+compress.DefaultSchedule("truncate")+", topk "+compress.DefaultSchedule("topk")+", subspace "+compress.DefaultSchedule("subspace")+", fixed:1 otherwise)")
	fs.StringVar(&d.gradCompress, "grad-compress", "none", "compression of the gradients the workers sum: "+gradcomp.Usage+" (see docs/gradients.md)")
	fs.BoolVar(&d.compressLast, "compress-last", false, "compress the last layer's exchange too (by default it goes whole, as in the VARCO paper)")
	fs.StringVar(&d.evalCompress, "eval-compress", "none", "compression of the evaluation passes' boundary exchange in full-graph training over parts, a codec without state (quant8, entropy:quant8); the kept model is evaluated once more with whole rows for the reported accuracies (for slow links: see docs/compression.md)")
	fs.StringVar(&d.link, "link", "", "emulate a network link per worker, e.g. 1gbit:1ms, to report emulated time")
	fs.Uint64Var(&d.partitionSeed, "partition-seed", 1, "seed of the partitioner")
	fs.StringVar(&d.checkpointDir, "checkpoint-dir", "", "write checkpoints to `DIR` (every --checkpoint-every epochs, and when interrupted by SIGINT or SIGTERM)")
	fs.IntVar(&d.checkpointEvery, "checkpoint-every", 10, "epochs between checkpoints when --checkpoint-dir is set (0: only when interrupted)")
	fs.StringVar(&d.resume, "resume", "", "continue the run checkpointed in `DIR` (the newest checkpoint that verifies), given again the settings it was trained with (any that differ are named and refused, see --resume-allow); it keeps checkpointing there unless --checkpoint-dir says otherwise")
	fs.Var(&d.rebalance, "rebalance", fmt.Sprintf("full-graph training with --parts N: re-partition during training when the workers' measured compute time is imbalanced, max/mean above %.2f (or X with --rebalance=X), weighting the nodes by a cost per node and per edge fitted to the measured times; the partition then depends on those times (see docs/training.md)", job.DefaultRebalance))
	fs.StringVar(&d.resumeAllow, "resume-allow", "", "settings a --resume may change, comma-separated: "+strings.Join(job.Resumable, ", "))
}

// rebalanceValue is --rebalance: a threshold that a bare --rebalance sets
// to job.DefaultRebalance (0: off).
type rebalanceValue float64

func (r *rebalanceValue) String() string {
	if r == nil || *r == 0 {
		return ""
	}
	return strconv.FormatFloat(float64(*r), 'g', -1, 64)
}

func (r *rebalanceValue) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		b, berr := strconv.ParseBool(s)
		switch {
		case berr != nil:
		case b:
			x, err = job.DefaultRebalance, nil
		default:
			x, err = 0, nil
		}
	}
	if err != nil || x != 0 && !(x > 1 && x <= 1e6) {
		return errors.New("want a max/mean threshold above 1, e.g. --rebalance=1.25, or a bare --rebalance")
	}
	*r = rebalanceValue(x)
	return nil
}

func (r *rebalanceValue) IsBoolFlag() bool { return true }
