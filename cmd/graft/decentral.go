package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/graft-gnn/graft/train/decentral"
)

func init() {
	commands["decentral"] = command{"fully distributed online training, one agent per node (regression, power, scheduling)", runDecentral}
}

const decentralUsage = "usage: graft decentral regression|power|scheduling [--optimizer dsgd|dadam|damsgrad|sgd|adam] [--piggyback] [--drop P] [--cut A-B:FROM:ROUNDS]... [--outage NODE:FROM:ROUNDS]... [--seed S] [--lr R] [--quick] [--metrics FILE] [--json]\n       graft decentral table|plot ...  (see scripts/decentral.sh)\nRun 'graft decentral <task> -h' for the flags."

func runDecentral(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprintln(stderr, decentralUsage)
		if len(args) == 0 {
			return usageError{fmt.Errorf("missing task: regression, power or scheduling")}
		}
		return flag.ErrHelp
	}
	task := args[0]
	switch task {
	case "table":
		return decentralTable(args[1:], stdout)
	case "plot":
		return decentralPlot(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("decentral "+task, flag.ContinueOnError)
	optName := fs.String("optimizer", "dadam", "dsgd, dadam or damsgrad (agents); sgd, adam name the same pairs: the central reference always runs the central form of the rule")
	piggyback := fs.Bool("piggyback", false, "send sample b−1's backward messages on sample b's forward messages")
	drop := fs.Float64("drop", 0, "probability that each message is lost")
	var cuts cutFlags
	var outages outageFlags
	fs.Var(&cuts, "cut", "silence the link between nodes A and B for ROUNDS rounds from round FROM, as A-B:FROM:ROUNDS (repeatable)")
	fs.Var(&outages, "outage", "take NODE off the network for ROUNDS rounds from round FROM, as NODE:FROM:ROUNDS (repeatable); it rejoins with its old parameters")
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
	opts := decentral.Options{Rule: rule, LR: *lr, Piggyback: *piggyback, Drop: *drop, Cuts: cuts, Outages: outages,
		Seed: *seed, Progress: progress.update}
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
func decentralTable(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return usageError{fmt.Errorf("usage: graft decentral table DIR")}
	}
	files, err := filepath.Glob(filepath.Join(args[0], "*.json"))
	if err != nil {
		return err
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
			// One sample per mini-batch (scheduling): both modes cost what
			// was measured, acting included.
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

func meanStd(xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	m := 0.0
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	if len(xs) > 1 {
		v /= float64(len(xs) - 1)
	}
	return fmt.Sprintf("%.4f ± %.4f", m, math.Sqrt(v))
}

// decentralPlot draws each metrics file (JSON lines from --metrics) as one
// panel of distributed and centralized metric against rounds, in SVG.
func decentralPlot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("decentral plot", flag.ContinueOnError)
	out := fs.String("out", "metric_vs_rounds.svg", "SVG file to write")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{fmt.Errorf("usage: graft decentral plot --out FILE METRICS.jsonl...")}
	}
	type point struct {
		Task, Metric             string
		Rounds                   float64
		Distributed, Centralized float64
	}
	const pw, ph, pad = 360.0, 260.0, 50.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="11">`+"\n", pw*float64(fs.NArg()), ph)
	for p, path := range fs.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var pts []point
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var q point
			if err := json.Unmarshal([]byte(line), &q); err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
			pts = append(pts, q)
		}
		if len(pts) == 0 {
			continue
		}
		x0 := float64(p) * pw
		xmax, ymin, ymax := 1.0, math.Inf(1), math.Inf(-1)
		for _, q := range pts {
			xmax = max(xmax, q.Rounds)
			ymin, ymax = min(ymin, q.Distributed, q.Centralized), max(ymax, q.Distributed, q.Centralized)
		}
		if ymax == ymin {
			ymax = ymin + 1
		}
		sx := func(r float64) float64 { return x0 + pad + (pw-1.5*pad)*r/xmax }
		sy := func(v float64) float64 { return ph - pad - (ph-1.6*pad)*(v-ymin)/(ymax-ymin) }
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#999"/>`+"\n", x0+pad, 0.6*pad, pw-1.5*pad, ph-1.6*pad)
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" font-size="13">%s: %s</text>`+"\n", x0+pw/2, 0.4*pad, pts[0].Task, pts[0].Metric)
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">rounds of message passing (max %.0f)</text>`+"\n", x0+pw/2, ph-0.3*pad, xmax)
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%.4g</text><text x="%g" y="%g" text-anchor="end">%.4g</text>`+"\n",
			x0+pad-3, sy(ymax)+4, ymax, x0+pad-3, sy(ymin), ymin)
		for i, series := range []struct {
			name, color string
			get         func(point) float64
		}{
			{"distributed", "#d62728", func(q point) float64 { return q.Distributed }},
			{"centralized", "#1f77b4", func(q point) float64 { return q.Centralized }},
		} {
			var path strings.Builder
			for j, q := range pts {
				cmd := "L"
				if j == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f,%.1f ", cmd, sx(q.Rounds), sy(series.get(q)))
			}
			dash := ""
			if i == 1 {
				dash = ` stroke-dasharray="5,3"`
			}
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", path.String(), series.color, dash)
			fmt.Fprintf(&b, `<text x="%g" y="%g" fill="%s">%s</text>`+"\n", x0+pw-0.5*pad-80, 0.6*pad+14+13*float64(i), series.color, series.name)
		}
	}
	b.WriteString("</svg>\n")
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
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
