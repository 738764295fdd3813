package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train/decentral"
)

func init() {
	commands["decentral"] = command{"fully distributed online training, one agent per node: decentral regression|power|scheduling; decentral table|plot of their results", runDecentral}
}

const decentralUsage = `usage: graft decentral regression|power|scheduling [flags]
       graft decentral table DIR
       graft decentral plot [--out FILE] METRICS.jsonl...

regression, power and scheduling train a task with one agent per node and
report the metric against a centralized reference; table prints a Markdown
table (mean ± std over seeds) of a directory of their --json results; plot
draws their --metrics histories against rounds of message passing
(scripts/decentral.sh runs all three).

Run 'graft decentral <task> -h' for a task's flags.`

// decentralTasks are the tasks graft decentral trains.
var decentralTasks = []string{"regression", "power", "scheduling"}

func runDecentral(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprintln(stderr, decentralUsage)
		if len(args) == 0 {
			return usageError{fmt.Errorf("missing task: regression, power or scheduling (or table, plot)")}
		}
		return flag.ErrHelp
	}
	switch task := args[0]; task {
	case "table":
		return decentralTable(args[1:], stdout, stderr)
	case "plot":
		return decentralPlot(args[1:], stdout, stderr)
	case "regression", "power", "scheduling":
		return decentralTrain(task, args[1:], stdout, stderr)
	}
	return unknownName("task", args[0], append(decentralTasks, "table", "plot"))
}

// decentralTrain runs one task.
func decentralTrain(task string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("decentral " + task)
	optName := fs.String("optimizer", "dadam", "dsgd, dadam or damsgrad (agents); sgd, adam name the same pairs: the central reference always runs the central form of the rule")
	piggyback := fs.Bool("piggyback", false, "send sample b−1's backward messages on sample b's forward messages")
	drop := fs.Float64("drop", 0, "probability that each message is lost")
	var cuts cutFlags
	var outages outageFlags
	fs.Var(&cuts, "cut", "silence the link between nodes A and B for ROUNDS rounds from round FROM, as `A-B:FROM:ROUNDS` (repeatable)")
	fs.Var(&outages, "outage", "take NODE off the network for ROUNDS rounds from round FROM, as `NODE:FROM:ROUNDS` (repeatable); it rejoins with its old parameters")
	seed := fs.Uint64("seed", 1, "seed for data, initialisation and faults")
	lr := fs.Float64("lr", 0, "learning rate (default the task's: "+decentralLRs()+")")
	quick := fs.Bool("quick", false, "the small version of the task used in tests")
	metricsPath := fs.String("metrics", "", "write the metric against rounds as JSON lines to this file, as the run evaluates it")
	asJSON := fs.Bool("json", false, "print one final JSON object instead of the summary")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (see 'graft decentral %s -h')", fs.Arg(0), task)}
	}
	rule, _, err := decentral.ParseOptimizer(*optName)
	if err != nil {
		return usageError{err}
	}
	if !(*drop >= 0 && *drop < 1) {
		return usageError{fmt.Errorf("--drop %g outside [0, 1)", *drop)}
	}
	if flagSet(fs, "lr") && !(*lr > 0) {
		return usageError{fmt.Errorf("--lr %g: want a positive learning rate", *lr)}
	}
	train, err := decentralTask(task, *quick)
	if err != nil {
		return err
	}
	progress := newDecentralProgress(stderr, task)
	opts := decentral.Options{Rule: rule, LR: *lr, Piggyback: *piggyback, Drop: *drop, Cuts: cuts, Outages: outages,
		Seed: *seed, Progress: progress.update}
	// The history is written as it is made, so a long run's file can be
	// followed and keeps what was evaluated before a failure.
	var history *metrics.JSONLines[decentral.Evaluation]
	if *metricsPath != "" {
		if history, err = metrics.CreateJSONLines[decentral.Evaluation](*metricsPath); err != nil {
			return err
		}
		opts.OnEval = history.Record
	}
	res, err := train(opts)
	progress.finish()
	if history != nil {
		err = errors.Join(err, history.Close())
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	printDecentralSummary(stdout, res)
	return nil
}

// decentralTask returns the run of the named task, full-size or quick.
func decentralTask(task string, quick bool) (func(decentral.Options) (*decentral.Result, error), error) {
	switch task {
	case "regression":
		s := decentral.RegressionDefaults()
		if quick {
			s = decentral.RegressionQuick()
		}
		return func(o decentral.Options) (*decentral.Result, error) { return decentral.Regression(s, o) }, nil
	case "power":
		s := decentral.PowerDefaults()
		if quick {
			s = decentral.PowerQuick()
		}
		return func(o decentral.Options) (*decentral.Result, error) { return decentral.Power(s, o) }, nil
	case "scheduling":
		s := decentral.SchedulingDefaults()
		if quick {
			s = decentral.SchedulingQuick()
		}
		return func(o decentral.Options) (*decentral.Result, error) { return decentral.Scheduling(s, o) }, nil
	}
	return nil, unknownName("task", task, decentralTasks)
}

// decentralLRs describes the tasks' default learning rates.
func decentralLRs() string {
	r := decentral.RegressionDefaults()
	return fmt.Sprintf("regression %g, %g with dsgd; power %g; scheduling %g",
		r.LR, r.SGDLR, decentral.PowerDefaults().LR, decentral.SchedulingDefaults().LR)
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
	fmt.Fprintf(w, "all %d mini-batches: %d rounds, %d messages, %d bytes\n", r.Batches, r.Total.Rounds, r.Total.Messages, r.Total.Bytes)
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

// authorsNumbers are the committed results of the authors' code
// (github.com/RostyslavUA/fdTrainGNN, see docs/decentral.md).
var authorsNumbers = map[string]string{
	"regression/dadam":    "0.0122 (D-Adam; central Adam 0.0097)",
	"regression/damsgrad": "0.0102 (D-AMSGrad)",
	"regression/dsgd":     "0.0107 (D-SGD; central SGD 0.0108)",
	"power/dadam":         "19.33 (distributed UWMMSE; central 19.33)",
	"scheduling/dadam":    "1.042 (decentralised; central 1.063)",
}

// decentralTable reads the JSON results of a directory of runs and prints a
// Markdown table of mean ± std over seeds.
func decentralTable(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("decentral table")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: graft decentral table DIR")
		fmt.Fprintln(fs.Output(), "\nPrints a Markdown table of the results in DIR, the files *.json that")
		fmt.Fprintln(fs.Output(), "'graft decentral TASK --json' wrote: per task, optimizer and drop rate the")
		fmt.Fprintln(fs.Output(), "mean ± std over seeds of the metric, and the cost of a mini-batch.")
	}
	dirs, err := parseFlagsAnywhere(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(dirs) != 1 {
		return usageError{flagError{errors.New("want one directory of results: graft decentral table DIR"), fs.Name()}}
	}
	files, err := filepath.Glob(filepath.Join(dirs[0], "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		if _, err := os.Stat(dirs[0]); err != nil {
			return err
		}
		return fmt.Errorf("%s holds no results (*.json files of graft decentral TASK --json)", dirs[0])
	}
	type group struct {
		task, opt  string
		drop       float64
		dist, cent []float64
		base       map[string][]float64
		r          decentral.Result
	}
	groups := map[string]*group{}
	var keys []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r decentral.Result
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
		if r.Task == "" || r.Metric == "" {
			return fmt.Errorf("%s is not a result of graft decentral TASK --json (it names no task and metric)", f)
		}
		key := fmt.Sprintf("%s/%s/%g", r.Task, r.Optimizer, r.Drop)
		g := groups[key]
		if g == nil {
			g = &group{task: r.Task, opt: r.Optimizer, drop: r.Drop, base: map[string][]float64{}, r: r}
			groups[key] = g
			keys = append(keys, key)
		}
		g.dist, g.cent = append(g.dist, r.Distributed), append(g.cent, r.Centralized)
		for k, v := range r.Baselines {
			g.base[k] = append(g.base[k], v)
		}
	}
	sort.Strings(keys)
	fmt.Fprintln(stdout, "| task | metric | optimizer | drop | seeds | distributed | centralized | baselines | authors | rounds/batch (piggyback / plain) | messages/batch | bytes/batch |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		g := groups[k]
		var bs []string
		for name, v := range g.base {
			bs = append(bs, fmt.Sprintf("%s %s", name, meanStd(v)))
		}
		sort.Strings(bs)
		authors := ""
		if g.drop == 0 {
			authors = authorsNumbers[g.task+"/"+g.opt]
		}
		c := g.r
		if c.WithPiggyback.Messages == 0 {
			// A result that records only the rounds of each mode (scheduling
			// before its modes were measured): one sample per mini-batch, so
			// both cost what the run measured, acting included.
			m := decentral.Cost{Rounds: c.RoundsPerBatch, Messages: c.MessagesPerBatch, Bytes: c.BytesPerBatch}
			c.WithPiggyback, c.WithoutPiggyback = m, m
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %g | %d | %s | %s | %s | %s | %d / %d | %d / %d | %d / %d |\n",
			g.task, c.Metric, g.opt, g.drop, len(g.dist), meanStd(g.dist), meanStd(g.cent), strings.Join(bs, ", "), authors,
			c.WithPiggyback.Rounds, c.WithoutPiggyback.Rounds, c.WithPiggyback.Messages, c.WithoutPiggyback.Messages,
			c.WithPiggyback.Bytes, c.WithoutPiggyback.Bytes)
	}
	return nil
}

// meanStd formats the mean ± sample standard deviation of xs, or "" for
// none.
func meanStd(xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	m, sd := stats.MeanStd(xs)
	return fmt.Sprintf("%.4f ± %.4f", m, sd)
}

// decentralPlot draws each metrics file (JSON lines from --metrics) as one
// panel of the distributed and the centralized model's metric against
// rounds of message passing.
func decentralPlot(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("decentral plot")
	out := fs.String("out", "metric_vs_rounds.svg", "image to write; its extension, .png or .svg, chooses the format")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: graft decentral plot [--out FILE] METRICS.jsonl...")
		fmt.Fprintln(fs.Output(), "\nDraws each file that 'graft decentral TASK --metrics' wrote as one panel: the")
		fmt.Fprintln(fs.Output(), "metric of the distributed and the centralized model against rounds of")
		fmt.Fprintln(fs.Output(), "message passing.\n\nFlags:")
		fs.PrintDefaults()
	}
	files, err := parseFlagsAnywhere(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{flagError{errors.New("no metrics files given: graft decentral plot --out FILE METRICS.jsonl..."), fs.Name()}}
	}
	panels := make([]metrics.Panel, len(files))
	for i, path := range files {
		evals, err := readJSONLinesFile[decentral.Evaluation](path)
		if err != nil {
			return err
		}
		for n, e := range evals {
			if e.Task == "" || e.Metric == "" {
				return fmt.Errorf("%s has nothing to plot: line %d is not an evaluation that 'graft decentral TASK --metrics' writes (task, metric, rounds, …)", path, n+1)
			}
		}
		panels[i] = roundsPanel(evals)
	}
	if err := metrics.PlotPanels(panels, *out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// roundsPanel is one run's metric, distributed (solid) and centralized
// (dashed), against cumulative rounds.
func roundsPanel(evals []decentral.Evaluation) metrics.Panel {
	dist := metrics.Series{Name: "distributed"}
	cent := metrics.Series{Name: "centralized", Color: 1, Dash: 1}
	for _, e := range evals {
		dist.X = append(dist.X, float64(e.Rounds))
		dist.Y = append(dist.Y, e.Distributed)
		cent.Y = append(cent.Y, e.Centralized)
	}
	cent.X = dist.X
	first := evals[0]
	return metrics.Panel{
		Title:  first.Task + ": " + first.Metric,
		XLabel: "rounds of message passing",
		YLabel: first.Metric,
		Series: []metrics.Series{dist, cent},
	}
}

// cutFlags collects --cut A-B:FROM:ROUNDS values.
type cutFlags []decentral.LinkCut

func (c *cutFlags) String() string { return fmt.Sprint(*c) }

func (c *cutFlags) Set(v string) error {
	var cut decentral.LinkCut
	if n, err := fmt.Sscanf(v, "%d-%d:%d:%d", &cut.A, &cut.B, &cut.From, &cut.Rounds); err != nil || n != 4 ||
		cut.A < 0 || cut.B < 0 || cut.A == cut.B || cut.From < 0 || cut.Rounds < 1 {
		return fmt.Errorf("%q is not A-B:FROM:ROUNDS with distinct nodes, FROM ≥ 0 and ROUNDS ≥ 1", v)
	}
	*c = append(*c, cut)
	return nil
}

// outageFlags collects --outage NODE:FROM:ROUNDS values.
type outageFlags []decentral.Outage

func (o *outageFlags) String() string { return fmt.Sprint(*o) }

func (o *outageFlags) Set(v string) error {
	var out decentral.Outage
	if n, err := fmt.Sscanf(v, "%d:%d:%d", &out.Node, &out.From, &out.Rounds); err != nil || n != 3 ||
		out.Node < 0 || out.From < 0 || out.Rounds < 1 {
		return fmt.Errorf("%q is not NODE:FROM:ROUNDS with FROM ≥ 0 and ROUNDS ≥ 1", v)
	}
	*o = append(*o, out)
	return nil
}
