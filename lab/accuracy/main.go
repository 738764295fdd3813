package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/graft-gnn/graft/internal/stats"
)

type run struct {
	Config string `json:"config"`
	Args   string `json:"args"`
	Result struct {
		Seed       uint64  `json:"seed"`
		TestAcc    float64 `json:"test_acc"`
		BestValAcc float64 `json:"best_val_acc"`
		Epochs     int     `json:"epochs"`
		EpochMs    float64 `json:"epoch_ms_median"`
		BytesGrad  float64 `json:"bytes_grad"`
	} `json:"result"`
	MinValLoss *epoch `json:"min_val_loss"`
}

// epoch is one line of a --metrics file, reduced to what selection needs.
type epoch struct {
	Epoch   int     `json:"epoch"`
	ValLoss float64 `json:"val_loss"`
	ValAcc  float64 `json:"val_acc"`
	TestAcc float64 `json:"test_acc"`
}

type group struct {
	args              string
	seeds             []uint64
	test, val, epochs []float64
	lossTest, valLoss []float64 // test accuracy at the lowest validation loss, and that loss
	gradBytes         []float64 // gradient bytes sent over the run
}

// candidateOf splits a configuration name ROW/CANDIDATE: the candidates of a
// row are hyperparameter settings among which validation decides.
func candidateOf(name string) (row string, ok bool) {
	row, _, ok = strings.Cut(name, "/")
	return row, ok
}

// selected returns, for every row with candidates, the candidate with the
// lowest mean validation loss (Shchur et al. choose hyperparameters on the
// validation set, never the test set).
func selected(order []string, groups map[string]*group) map[string]string {
	best := map[string]string{}
	bestLoss := map[string]float64{}
	for _, name := range order {
		row, ok := candidateOf(name)
		g := groups[name]
		if !ok || len(g.valLoss) != len(g.test) {
			continue
		}
		m := stats.Mean(g.valLoss)
		if l, seen := bestLoss[row]; !seen || m < l {
			best[row], bestLoss[row] = name, m
		}
	}
	return best
}

// options are the command line's choices for the summary.
type options struct {
	only   *regexp.Regexp // summarise only the configurations it matches (nil: all)
	paired bool           // print only the paired comparisons
}

// parseArgs reads the command line: the file of -min-val-loss, or the
// summary's options.
func parseArgs(args []string, stderr io.Writer) (minLoss string, opt options, err error) {
	fs := flag.NewFlagSet("accuracy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&minLoss, "min-val-loss", "", "print the epoch of lowest validation loss of this graft train --metrics `FILE` as JSON")
	only := fs.String("only", "", "summarise only the configurations whose name matches the regular `EXPR` (as scripts/accuracy.sh's ONLY); a paired row needs its baseline to match too")
	fs.BoolVar(&opt.paired, "paired", false, "print only the tables pairing methods with their baselines")
	if err := fs.Parse(args); err != nil {
		return "", options{}, err
	}
	if fs.NArg() > 0 {
		return "", options{}, fmt.Errorf("unexpected argument %q: the runs come on stdin", fs.Arg(0))
	}
	if *only != "" {
		if opt.only, err = regexp.Compile(*only); err != nil {
			return "", options{}, fmt.Errorf("-only: %v", err)
		}
	}
	return minLoss, opt, nil
}

func main() {
	minLoss, opt, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(2)
	}
	if minLoss != "" {
		err = printMinValLoss(minLoss, os.Stdout)
	} else {
		err = summarise(os.Stdin, os.Stdout, opt)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}

func printMinValLoss(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	e, err := minValLoss(f)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return json.NewEncoder(w).Encode(e)
}

// minValLoss returns the first epoch with the lowest validation loss.
func minValLoss(r io.Reader) (epoch, error) {
	best := epoch{ValLoss: math.Inf(1)}
	sc := bufio.NewScanner(r)
	n := 0
	for line := 1; sc.Scan(); line++ {
		var e epoch
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return epoch{}, fmt.Errorf("line %d: %v", line, err)
		}
		if e.ValLoss < best.ValLoss {
			best = e
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return epoch{}, err
	}
	if n == 0 || math.IsInf(best.ValLoss, 1) {
		return epoch{}, errors.New("no epoch with a finite validation loss")
	}
	return best, nil
}

// The headers of the tables summarise prints; pages that show one of its
// tables mark it as generated (see doctables_test.go).
const (
	mainHeader = "| configuration | seeds | test accuracy (%) | best val accuracy (%) | test at lowest val loss (%) | lowest val loss | epochs run | graft train flags |"
	gradHeader = "| configuration | method | seeds | test accuracy (%) | exact gradients, same seeds (%) | paired Δ (points) | gradient bytes per epoch | × fewer |"
	// pairedHeader takes the baseline's name.
	pairedHeader = "| configuration | method | seeds | test accuracy (%%) | %s, same seeds (%%) | paired Δ (points) |"
)

// readRuns groups the runs by configuration, in order of first appearance,
// keeping only the configurations only matches (all if nil).
func readRuns(r io.Reader, only *regexp.Regexp) (order []string, groups map[string]*group, err error) {
	groups = map[string]*group{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		var x run
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			return nil, nil, fmt.Errorf("line %d: %v", line, err)
		}
		if only != nil && !only.MatchString(x.Config) {
			continue
		}
		g := groups[x.Config]
		if g == nil {
			g = &group{args: x.Args}
			groups[x.Config] = g
			order = append(order, x.Config)
		}
		g.seeds = append(g.seeds, x.Result.Seed)
		g.test = append(g.test, 100*x.Result.TestAcc)
		g.val = append(g.val, 100*x.Result.BestValAcc)
		g.epochs = append(g.epochs, float64(x.Result.Epochs))
		g.gradBytes = append(g.gradBytes, x.Result.BytesGrad)
		if x.MinValLoss != nil {
			g.lossTest = append(g.lossTest, 100*x.MinValLoss.TestAcc)
			g.valLoss = append(g.valLoss, x.MinValLoss.ValLoss)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(order) == 0 {
		return nil, nil, errors.New("no runs to summarise")
	}
	return order, groups, nil
}

// summarise prints the table of every configuration (unless opt.paired)
// and the paired comparisons, tables apart by a blank line.
func summarise(r io.Reader, w io.Writer, opt options) error {
	order, groups, err := readRuns(r, opt.only)
	if err != nil {
		return err
	}
	tables := 0
	if !opt.paired {
		writeMain(w, order, groups)
		tables++
	}
	for _, b := range baselines {
		tables += writePaired(w, order, groups, b, tables > 0)
	}
	if tables == 0 {
		return errors.New("no configuration ROW@METHOD has its baseline's runs to pair with")
	}
	return nil
}

// writeMain writes a row for every configuration: test accuracy, mean ±
// std over seeds, of the model graft train selects and of the model of
// lowest validation loss.
func writeMain(w io.Writer, order []string, groups map[string]*group) {
	chosen := selected(order, groups)
	fmt.Fprintln(w, mainHeader)
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, name := range order {
		g := groups[name]
		tm, ts := stats.MeanStd(g.test)
		vm, vs := stats.MeanStd(g.val)
		em := stats.Mean(g.epochs)
		loss, valLoss := "–", "–"
		if len(g.lossTest) == len(g.test) {
			lm, ls := stats.MeanStd(g.lossTest)
			loss = fmt.Sprintf("%.1f ± %.1f", lm, ls)
			vl := stats.Mean(g.valLoss)
			valLoss = fmt.Sprintf("%.4f", vl)
		}
		label := name
		if row, ok := candidateOf(name); ok {
			if chosen[row] == name {
				label += " (selected)"
			} else {
				label += " (not selected)"
			}
		}
		fmt.Fprintf(w, "| %s | %d | %.1f ± %.1f | %.1f ± %.1f | %s | %s | %.0f | `%s` |\n", label, len(g.test), tm, ts, vm, vs, loss, valLoss, em, g.args)
	}
	if len(chosen) > 0 {
		fmt.Fprintln(w, "\nRows with candidates (ROW/CANDIDATE) report the candidate with the lowest mean validation loss.")
	}
}

// baselines are the methods others are paired with: "full" is full-graph
// training (beside sampled methods); "none" exact gradients (beside
// compressed ones), and the table then also compares the gradient bytes
// the runs sent; "fp32" float32 training (beside bf16).
var baselines = []string{"full", "none", "fp32"}

// byRow returns the configurations ROW@METHOD grouped by ROW, rows in order
// of first appearance and each row's methods in theirs.
func byRow(order []string) []string {
	var rows []string
	methods := map[string][]string{}
	for _, name := range order {
		row, _, ok := strings.Cut(name, "@")
		if !ok {
			continue
		}
		if methods[row] == nil {
			rows = append(rows, row)
		}
		methods[row] = append(methods[row], name)
	}
	var out []string
	for _, row := range rows {
		out = append(out, methods[row]...)
	}
	return out
}

// writePaired writes, for every configuration ROW@METHOD beside a baseline
// ROW@BASE, the mean and spread of the per-seed differences of test
// accuracy (same seeds: same split and initialisation), over the seeds
// both ran, a row's methods together. It returns the number of tables
// written (0 or 1), preceded by a blank line if gap.
func writePaired(w io.Writer, order []string, groups map[string]*group, baseline string, gap bool) int {
	header := false
	for _, name := range byRow(order) {
		row, method, _ := strings.Cut(name, "@")
		base := groups[row+"@"+baseline]
		if slices.Contains(baselines, method) || base == nil {
			continue
		}
		baseAt := map[uint64]float64{}
		for i, s := range base.seeds {
			baseAt[s] = base.test[i]
		}
		var diffs, mine, theirs []float64
		for i, s := range groups[name].seeds {
			if b, ok := baseAt[s]; ok {
				diffs = append(diffs, groups[name].test[i]-b)
				mine, theirs = append(mine, groups[name].test[i]), append(theirs, b)
			}
		}
		if len(diffs) == 0 {
			continue
		}
		grad := baseline == "none"
		if !header {
			if gap {
				fmt.Fprintln(w)
			}
			if grad {
				fmt.Fprintln(w, gradHeader)
				fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
			} else {
				fmt.Fprintf(w, pairedHeader+"\n", map[string]string{"full": "full-graph", "fp32": "fp32"}[baseline])
				fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
			}
			header = true
		}
		mm, ms := stats.MeanStd(mine)
		tm, ts := stats.MeanStd(theirs)
		dm, ds := stats.MeanStd(diffs)
		fmt.Fprintf(w, "| %s | %s | %d | %.1f ± %.1f | %.1f ± %.1f | %+.2f ± %.2f |", row, method, len(diffs), mm, ms, tm, ts, dm, ds)
		if grad {
			mine, theirs := perEpoch(groups[name]), perEpoch(base)
			fmt.Fprintf(w, " %s | %.1f |", formatBytes(mine), theirs/mine)
		}
		fmt.Fprintln(w)
	}
	if header {
		return 1
	}
	return 0
}

// perEpoch is a configuration's gradient bytes per epoch, over all its runs.
func perEpoch(g *group) float64 {
	var b, e float64
	for i := range g.gradBytes {
		b, e = b+g.gradBytes[i], e+g.epochs[i]
	}
	return b / max(e, 1)
}

func formatBytes(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
