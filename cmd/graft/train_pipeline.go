package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/graft-gnn/graft/job"
	"github.com/graft-gnn/graft/train/pipeline"
)

// pipelineOptions are graft train's flags of --mode pipeline.
type pipelineOptions struct {
	stages, micros int
	layers         string
	timeout        time.Duration
}

var pipelineFlags = []string{"stages", "micro-batches", "stage-layers", "stage-timeout"}

func (p *pipelineOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&p.stages, "stages", 2, "with --mode pipeline: stages, each holding a contiguous range of the model's layers (goroutines, or the processes of a multi-process job)")
	fs.IntVar(&p.micros, "micro-batches", 4, "with --mode pipeline: micro-batches of --batch-size seeds per optimiser step, which flow through the stages one after another (a one-process run with --accumulate M trains the same)")
	fs.StringVar(&p.layers, "stage-layers", "", "with --mode pipeline: the layers of each stage, `N,N,...` (default: as even as can be, later stages taking the extra ones)")
	fs.DurationVar(&p.timeout, "stage-timeout", pipeline.DefaultTimeout, "with --mode pipeline: the longest a stage waits for another's activations, gradients or parameters; a dead or stalled one is then an error naming it")
}

// spec returns the pipeline's settings, nil for another mode.
func (p *pipelineOptions) spec(fs *flag.FlagSet, mode string) (*job.PipelineSpec, error) {
	if mode != "pipeline" {
		for _, name := range pipelineFlags {
			if flagSet(fs, name) {
				return nil, fmt.Errorf("--%s: only with --mode pipeline", name)
			}
		}
		return nil, nil
	}
	for _, name := range []string{"workers", "servers", "staleness-rule", "max-staleness", "grads-per-update", "slow-worker", "ps-timeout"} {
		if flagSet(fs, name) {
			return nil, fmt.Errorf("--%s: only with --mode async or ps-sync", name)
		}
	}
	if p.timeout <= 0 {
		return nil, fmt.Errorf("--stage-timeout %v: want a positive duration", p.timeout)
	}
	s := &job.PipelineSpec{Stages: p.stages, Micros: p.micros, Timeout: p.timeout}
	if p.layers != "" {
		for _, f := range strings.Split(p.layers, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("--stage-layers %q: want layer counts, N,N,...", p.layers)
			}
			s.Layers = append(s.Layers, n)
		}
	}
	return s, nil
}

// printPipeline adds a pipeline run's lines to the text summary.
func printPipeline(w io.Writer, sum job.Summary) {
	if sum.Mode != "pipeline" {
		return
	}
	fmt.Fprintf(w, "pipeline        %d stages of %v layers, %d micro-batches (bubble %.2f at equal stages), %.1f s training\n",
		sum.Stages, sum.StageLayers, sum.MicroBatches, sum.BubbleFraction, sum.TrainSeconds)
	fmt.Fprintf(w, "stages          compute %s s, waiting %s s; sent %s activations, %s gradients\n",
		seconds(sum.StageComputeSeconds), seconds(sum.StageWaitSeconds), formatBytes(sum.BytesFwd), formatBytes(sum.BytesBwd))
}

// seconds formats a list of durations in seconds.
func seconds(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(s, " / ")
}
