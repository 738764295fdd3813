package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/graft-gnn/graft/job"
	"github.com/graft-gnn/graft/train/async"
)

// asyncOptions are graft train's parameter-server flags.
type asyncOptions struct {
	mode             string
	workers, servers int
	rule             string
	maxStaleness     int
	perUpdate        int
	slowWorker       string
	timeout          time.Duration
}

func (a *asyncOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&a.mode, "mode", "sync", "how workers combine their gradients: sync (the trainers' synchronous steps), async (with --sampler: a parameter server that applies each worker's gradient as it arrives), ps-sync (the same parameter server, waiting for every worker each step: async's baseline) or pipeline (with --sampler: the model's layers split into --stages stages that micro-batches flow through, GPipe's schedule; see docs/pipeline.md)")
	fs.IntVar(&a.workers, "workers", 4, "with --mode async or ps-sync: workers, each training on every `N`-th training seed with its own sampler (goroutines, or the first N processes of a multi-process job of workers + servers)")
	fs.IntVar(&a.servers, "servers", 1, "with --mode async or ps-sync: servers, each holding a share of the parameters and their optimiser state (goroutines, or the last processes of a multi-process job)")
	fs.StringVar(&a.rule, "staleness-rule", "inverse", "with --mode async: the learning rate of a gradient τ updates old: inverse (divided by τ, staleness-aware async SGD), linear:C (divided by 1+C·τ), none (unchanged) or drop (a stale gradient is dropped, and counted: only gradients of the current parameters apply)")
	fs.IntVar(&a.maxStaleness, "max-staleness", 0, "with --mode async: drop (and count) gradients more than `T` updates old; 0 keeps all")
	fs.IntVar(&a.perUpdate, "grads-per-update", 1, "with --mode async: each server applies the mean of every `K` gradients it keeps, from whichever workers, as one update (staleness then counts updates; the rule weights each gradient in the mean); with --staleness-rule drop, K-batch-sync SGD")
	fs.StringVar(&a.slowWorker, "slow-worker", "", "with --mode async or ps-sync: make worker RANK's steps take FACTOR times their compute time (`RANK:FACTOR`, e.g. 1:3), to see how the modes cope with a straggler")
	fs.DurationVar(&a.timeout, "ps-timeout", async.DefaultTimeout, "with --mode async or ps-sync: the longest a worker waits for a server, or a server for any request; a dead or stalled one is then an error naming it")
}

// spec returns the parameter-server settings, nil for --mode sync or
// pipeline (whose flags pipelineOptions checks).
func (a *asyncOptions) spec(fs *flag.FlagSet) (*job.AsyncSpec, error) {
	switch a.mode {
	case "pipeline":
		return nil, nil
	case "sync":
		for _, name := range []string{"workers", "servers", "staleness-rule", "max-staleness", "grads-per-update", "slow-worker", "ps-timeout"} {
			if flagSet(fs, name) {
				return nil, fmt.Errorf("--%s: only with --mode async or ps-sync", name)
			}
		}
		return nil, nil
	case "async", "ps-sync":
	default:
		return nil, fmt.Errorf("--mode %q: want sync, async, ps-sync or pipeline", a.mode)
	}
	if a.workers < 1 || a.servers < 1 {
		return nil, fmt.Errorf("--workers %d and --servers %d: want at least 1 each", a.workers, a.servers)
	}
	if _, err := async.ParseRule(a.rule); err != nil {
		return nil, fmt.Errorf("--staleness-rule: %v", err)
	}
	if a.maxStaleness < 0 {
		return nil, fmt.Errorf("--max-staleness %d: want 0 (no bound) or more", a.maxStaleness)
	}
	if a.perUpdate < 1 {
		return nil, fmt.Errorf("--grads-per-update %d: want 1 or more", a.perUpdate)
	}
	if a.timeout <= 0 {
		return nil, fmt.Errorf("--ps-timeout %v: want a positive duration", a.timeout)
	}
	s := &job.AsyncSpec{Workers: a.workers, Servers: a.servers, Rule: a.rule, MaxStaleness: a.maxStaleness, PerUpdate: a.perUpdate, Sync: a.mode == "ps-sync", Timeout: a.timeout}
	if a.maxStaleness == 0 {
		s.MaxStaleness = -1
	}
	if a.mode == "ps-sync" && (flagSet(fs, "staleness-rule") || flagSet(fs, "max-staleness")) {
		return nil, fmt.Errorf("--staleness-rule and --max-staleness: only with --mode async (ps-sync's gradients are never stale)")
	}
	if a.mode == "ps-sync" && flagSet(fs, "grads-per-update") {
		return nil, fmt.Errorf("--grads-per-update: only with --mode async (ps-sync applies one gradient from every worker as each update)")
	}
	if a.slowWorker != "" {
		rank, factor, ok := strings.Cut(a.slowWorker, ":")
		r, err1 := strconv.Atoi(rank)
		f, err2 := strconv.ParseFloat(factor, 64)
		if !ok || err1 != nil || err2 != nil || r < 0 || r >= a.workers || !(f >= 1) || f > 1000 {
			return nil, fmt.Errorf("--slow-worker %q: want RANK:FACTOR with RANK in [0,%d) and FACTOR from 1 to 1000", a.slowWorker, a.workers)
		}
		s.SlowWorker, s.SlowFactor = r, f
	}
	return s, nil
}

// printAsync adds a parameter-server run's lines to the text summary.
func printAsync(w io.Writer, sum job.Summary) {
	if sum.Mode != "async" && sum.Mode != "ps-sync" {
		return
	}
	fmt.Fprintf(w, "parameter server %s: %d workers, %d servers, %.1f s training\n", sum.Mode, sum.Workers, sum.Servers, sum.TrainSeconds)
	if sum.Mode == "async" {
		bound := "no bound"
		if sum.MaxStaleness != nil {
			bound = fmt.Sprintf("bound %d", *sum.MaxStaleness)
		}
		if sum.GradsPerUpdate > 1 {
			bound += fmt.Sprintf(", %d gradients an update", sum.GradsPerUpdate)
		}
		fmt.Fprintf(w, "staleness       mean %.2f, p50 %d, p99 %d, max %d (rule %s, %s; %d dropped)\n",
			sum.StalenessMean, sum.StalenessP50, sum.StalenessP99, sum.StalenessMax, sum.StalenessRule, bound, sum.DroppedUpdates)
	}
	fmt.Fprintf(w, "updates         %.1f per second\n", sum.UpdatesPerSecond)
	fmt.Fprintf(w, "sent            %s gradients to the servers, %s parameters back\n", formatBytes(sum.BytesGrad), formatBytes(sum.BytesParams))
}
