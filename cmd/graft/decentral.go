package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/graft-gnn/graft/train/decentral"
)

func init() {
	commands["decentral"] = command{"fully distributed online training, one agent per node (regression, power, scheduling)", runDecentral}
}

const decentralUsage = "usage: graft decentral regression|power|scheduling [--optimizer dsgd|dadam|damsgrad|sgd|adam] [--piggyback] [--drop P] [--seed S] [--lr R] [--quick] [--metrics FILE] [--json]"

func runDecentral(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprintln(stderr, decentralUsage)
		if len(args) == 0 {
			return usageError{fmt.Errorf("missing task: regression, power or scheduling")}
		}
		return flag.ErrHelp
	}
	task := args[0]
	fs := flag.NewFlagSet("decentral "+task, flag.ContinueOnError)
	optName := fs.String("optimizer", "dadam", "dsgd, dadam or damsgrad (agents); sgd, adam name the same pairs: the central reference always runs the central form of the rule")
	piggyback := fs.Bool("piggyback", false, "send sample b−1's backward messages on sample b's forward messages")
	drop := fs.Float64("drop", 0, "probability that each message is lost")
	seed := fs.Uint64("seed", 1, "seed for data, initialisation and faults")
	lr := fs.Float64("lr", 0, "learning rate (0: the task's default)")
	quick := fs.Bool("quick", false, "the small version of the task used in tests")
	metrics := fs.String("metrics", "", "write the metric against rounds as JSON lines to this file")
	asJSON := fs.Bool("json", false, "print one final JSON object instead of the summary")
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (see 'graft decentral -h')", fs.Arg(0))}
	}
	rule, _, err := decentral.ParseOptimizer(*optName)
	if err != nil {
		return usageError{err}
	}
	if !(*drop >= 0 && *drop < 1) {
		return usageError{fmt.Errorf("--drop %g outside [0, 1)", *drop)}
	}
	if *lr < 0 {
		return usageError{fmt.Errorf("--lr %g is negative", *lr)}
	}
	progress := newDecentralProgress(stderr, task)
	opts := decentral.Options{Rule: rule, LR: *lr, Piggyback: *piggyback, Drop: *drop, Seed: *seed, Progress: progress.update}
	var res *decentral.Result
	switch task {
	case "regression":
		s := decentral.RegressionDefaults()
		if *quick {
			s = decentral.RegressionQuick()
		}
		res, err = decentral.Regression(s, opts)
	case "power":
		s := decentral.PowerDefaults()
		if *quick {
			s = decentral.PowerQuick()
		}
		res, err = decentral.Power(s, opts)
	case "scheduling":
		s := decentral.SchedulingDefaults()
		if *quick {
			s = decentral.SchedulingQuick()
		}
		res, err = decentral.Scheduling(s, opts)
	default:
		return usageError{fmt.Errorf("unknown task %q (want regression, power or scheduling)", task)}
	}
	progress.finish()
	if err != nil {
		return err
	}
	if *metrics != "" {
		if err := writeDecentralMetrics(*metrics, res); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	printDecentralSummary(stdout, res)
	return nil
}

func writeDecentralMetrics(path string, res *decentral.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, p := range res.History {
		line := struct {
			Task   string `json:"task"`
			Metric string `json:"metric"`
			decentral.Point
		}{res.Task, res.Metric, p}
		if err := enc.Encode(line); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func printDecentralSummary(w io.Writer, r *decentral.Result) {
	fmt.Fprintf(w, "task %s, %s, seed %d, drop %g, piggyback %v\n", r.Task, r.Optimizer, r.Seed, r.Drop, r.Piggyback)
	fmt.Fprintf(w, "%-12s distributed %.4f   centralized %.4f\n", r.Metric, r.Distributed, r.Centralized)
	names := make([]string, 0, len(r.Baselines))
	for name := range r.Baselines {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "%-12s %.4f\n", name, r.Baselines[name])
	}
	fmt.Fprintf(w, "per mini-batch: %d rounds, %d messages, %d bytes\n", r.RoundsPerBatch, r.MessagesPerBatch, r.BytesPerBatch)
	fmt.Fprintf(w, "  with piggyback    %d rounds, %d messages, %d bytes\n", r.WithPiggyback.Rounds, r.WithPiggyback.Messages, r.WithPiggyback.Bytes)
	fmt.Fprintf(w, "  without piggyback %d rounds, %d messages, %d bytes\n", r.WithoutPiggyback.Rounds, r.WithoutPiggyback.Messages, r.WithoutPiggyback.Bytes)
	fmt.Fprintf(w, "  %s\n", r.RoundsFormula)
	if r.AwayUpdates > 0 {
		fmt.Fprintf(w, "updates skipped by agents off the network: %d\n", r.AwayUpdates)
	}
}

// decentralProgress is a bar on a terminal and a line per tenth elsewhere.
type decentralProgress struct {
	w    io.Writer
	task string
	bar  *progressbar.ProgressBar
	last int
}

func newDecentralProgress(w io.Writer, task string) *decentralProgress {
	p := &decentralProgress{w: w, task: task}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(task),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *decentralProgress) update(done, total int) {
	if p.bar != nil {
		p.bar.ChangeMax(total)
		_ = p.bar.Set(done)
		return
	}
	if step := max(1, total/10); done%step == 0 || done == total {
		if done != p.last {
			fmt.Fprintf(p.w, "%s: mini-batch %d/%d\n", p.task, done, total)
			p.last = done
		}
	}
}

func (p *decentralProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
