package fullgraph

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
)

// The tests in this file check the claims of Cerviño et al., "Distributed
// Training of Large Graph Neural Networks with Variable Communication
// Rates" (arXiv 2406.17611, VARCO), in the spirit of etcd's
// raft_paper_test.go: each cites the sentence it checks. They run the
// authors' recipe scaled down (3-layer SAGE-mean, ReLU, no dropout, Adam
// lr 0.01, full-batch; column truncation with the last layer's input
// whole) on a small stochastic block model split randomly across 4
// workers, so that most neighbours are remote and the halo carries most
// of the signal.

// paperTask is the graph of the paper tests: the class signal is mostly in
// the neighbourhood (noisy own features, homophilous edges).
type paperTask struct {
	p       train.Problem
	classes int
	layout  *partition.Layout
}

const (
	paperNodes    = 1000
	paperFeatures = 32
	paperHidden   = 32
	paperEpochs   = 60
	paperParts    = 4
)

func newPaperTask(t testing.TB) paperTask {
	t.Helper()
	const classes = 4
	g, x, labels, err := graph.SBM(graph.SBMConfig{Nodes: paperNodes, Classes: classes, AvgDegree: 10, Homophily: 0.7,
		Features: paperFeatures, FeatureNoise: 1.5}, 11)
	if err != nil {
		t.Fatal(err)
	}
	p := train.Problem{Graph: g, Features: nn.DenseFeatures(x), Labels: labels}
	for v := range int32(paperNodes) {
		switch v % 10 {
		case 0, 1, 2:
			p.Train = append(p.Train, v)
		case 3, 4:
			p.Val = append(p.Val, v)
		default:
			p.Test = append(p.Test, v)
		}
	}
	parts, err := partition.Random{}.Partition(g, paperParts, partition.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(g, parts, paperParts)
	if err != nil {
		t.Fatal(err)
	}
	return paperTask{p: p, classes: classes, layout: layout}
}

func paperConfig(classes int, seed uint64) train.Config {
	return train.Config{
		Model:     nn.Config{Model: "sage", Hidden: paperHidden, Classes: classes, Layers: 3, Seed: seed},
		Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01},
		Epochs:    paperEpochs,
	}
}

// paperRun is one training run's per-epoch record.
type paperRun struct {
	best   train.Metrics
	epochs []metrics.Epoch
}

// halo is the cumulative halo-exchange bytes (both directions) after each epoch.
func (r paperRun) halo() []int64 {
	out := make([]int64, len(r.epochs))
	var sum int64
	for i, m := range r.epochs {
		sum += m.BytesFwd + m.BytesBwd
		out[i] = sum
	}
	return out
}

func (r paperRun) total() int64 { h := r.halo(); return h[len(h)-1] }

// bestWithin is the test accuracy at the best validation epoch among the
// epochs whose cumulative halo bytes stay within budget (the paper's
// "model accuracy" under a communication budget); -1 if none does.
func (r paperRun) bestWithin(budget int64) float64 {
	best, acc := -1.0, -1.0
	for i, b := range r.halo() {
		if b > budget {
			break
		}
		if m := r.epochs[i]; m.ValAcc > best {
			best, acc = m.ValAcc, m.TestAcc
		}
	}
	return acc
}

func runPaper(t testing.TB, task paperTask, codec, schedule string, seed uint64, link *comm.Link) paperRun {
	t.Helper()
	cfg := paperConfig(task.classes, seed)
	opts := compressed(t, codec, schedule, cfg.Epochs)
	opts.Link = link
	var run paperRun
	res, _, err := RunInProcess(context.Background(), cfg, task.p, task.layout, opts,
		func(m metrics.Epoch) error { run.epochs = append(run.epochs, m); return nil })
	if err != nil {
		t.Fatal(err)
	}
	run.best = res.Best
	return run
}

var paperCache struct {
	sync.Mutex
	task *paperTask
	runs map[string][]paperRun
}

// paperSeeds are the initialisation seeds every configuration is run with;
// accuracies are averaged over them.
var paperSeeds = []uint64{1, 2, 3}

// paperRuns trains codec+schedule once per seed (cached across tests).
func paperRuns(t *testing.T, codec, schedule string) []paperRun {
	t.Helper()
	paperCache.Lock()
	defer paperCache.Unlock()
	if paperCache.task == nil {
		task := newPaperTask(t)
		paperCache.task, paperCache.runs = &task, map[string][]paperRun{}
	}
	key := codec + " " + schedule
	if rs, ok := paperCache.runs[key]; ok {
		return rs
	}
	var rs []paperRun
	for _, seed := range paperSeeds {
		rs = append(rs, runPaper(t, *paperCache.task, codec, schedule, seed, nil))
	}
	paperCache.runs[key] = rs
	return rs
}

// meanBest is the mean over seeds of the test accuracy at the best
// validation epoch.
func meanBest(rs []paperRun) float64 {
	accs := make([]float64, len(rs))
	for i, r := range rs {
		accs[i] = r.best.TestAcc
	}
	return stats.Mean(accs)
}

// meanWithin is the mean over seeds of the model accuracy within budget.
func meanWithin(rs []paperRun, budget int64) float64 {
	accs := make([]float64, len(rs))
	for i, r := range rs {
		accs[i] = r.bestWithin(budget)
	}
	return stats.Mean(accs)
}

var paperFixed = []float64{2, 4, 8, 16, 32}

// sentRows is the number of rows every worker's forward exchange sends,
// summed over workers: the halo rows of the layout.
func sentRows(l *partition.Layout) int64 {
	var n int64
	for _, p := range l.Parts {
		for q, rows := range p.Send {
			if q != p.ID {
				n += int64(len(rows))
			}
		}
	}
	return n
}

// From a reading of the authors' public experiment code: "keep the first k = int(F/r_t)
// feature columns of every boundary-node activation row ... The last
// layer's input is never compressed ... the backward all-to-all
// automatically carries gradients of only the k kept columns (same
// reduction both directions)", with the schedule
// r_t = max(r_max − s·t·(r_max − r_min)/(T − 2), r_min).
// graft's SAGE projects before it aggregates (nn.SAGE), so layer l's
// exchange carries its out-wide message x·W_l: H columns for layers 0 and
// 1, C (classes) for the last. Every epoch's halo bytes must therefore be
// exactly 4·rows·(2·⌊H/r_t⌋ + C) in each direction.
func TestPaperBytesFollowTheAuthorsTruncation(t *testing.T) {
	rs := paperRuns(t, "truncate", "linear:128:1.5:5")
	rows := sentRows(paperCache.task.layout)
	lin := compress.Linear{Max: 128, Min: 1.5, Slope: 5, Steps: paperEpochs}
	for i, m := range rs[0].epochs {
		r := lin.Ratio(i)
		if m.Ratio != r {
			t.Fatalf("epoch %d: ratio %g in force, schedule says %g", i+1, m.Ratio, r)
		}
		want := 4 * rows * int64(2*compress.KeptColumns(paperHidden, r)+paperCache.task.classes)
		if m.BytesFwd != want || m.BytesBwd != want {
			t.Fatalf("epoch %d (r = %.3g): %d forward and %d backward halo bytes, want %d each", i+1, r, m.BytesFwd, m.BytesBwd, want)
		}
	}
}

// Abstract: "Compressing the communicated node activations by a fixed
// amount improves the training speeds, but lowers the accuracy of the
// trained GNN." Every fixed ratio sends fewer halo bytes (and so takes less
// emulated time on a 1 Gbit/s link) than full communication, and every
// fixed ratio ≥ 2 loses at least 3 points of test accuracy (mean of 3
// seeds) against full communication on this graph.
func TestPaperFixedCompressionIsFasterButLessAccurate(t *testing.T) {
	full := paperRuns(t, "none", "fixed:1")
	link, err := comm.ParseLink("1gbit:1ms")
	if err != nil {
		t.Fatal(err)
	}
	emulated := func(codec, sched string) float64 {
		r := runPaper(t, *paperCache.task, codec, sched, 1, &link)
		var s float64
		for _, m := range r.epochs {
			s += m.EmulatedCommSeconds
		}
		return s
	}
	fullTime := emulated("none", "fixed:1")
	for _, r := range paperFixed {
		sched := fmt.Sprintf("fixed:%g", r)
		fixed := paperRuns(t, "truncate", sched)
		if fixed[0].total() >= full[0].total() {
			t.Errorf("%s: %d halo bytes, full communication %d", sched, fixed[0].total(), full[0].total())
		}
		if r == 2 || r == 32 {
			if got := emulated("truncate", sched); got >= fullTime {
				t.Errorf("%s: %.3gs emulated communication, full communication %.3gs", sched, got, fullTime)
			}
		}
		if a, f := meanBest(fixed), meanBest(full); a > f-0.03 {
			t.Errorf("%s: test accuracy %.4f, full communication %.4f: want a loss of at least 3 points", sched, a, f)
		}
	}
}

// Abstract: "we introduce a variable compression scheme ... without
// compromising the accuracy of the learned model", "comparable performance
// to the one obtained with full communication". The authors' linear
// schedule (r from 128 to 1, slope 5) reaches the test accuracy of full
// communication within 1 point (mean of 3 seeds; a test node is 0.2
// points here) while sending at most 85% of its halo bytes.
func TestPaperVariableCompressionMatchesFullCommunication(t *testing.T) {
	full := paperRuns(t, "none", "fixed:1")
	variable := paperRuns(t, "truncate", "linear:128:1:5")
	if a, f := meanBest(variable), meanBest(full); a < f-0.01 {
		t.Errorf("variable compression: test accuracy %.4f, full communication %.4f", a, f)
	}
	if v, f := variable[0].total(), full[0].total(); float64(v) > 0.85*float64(f) {
		t.Errorf("variable compression sent %d halo bytes, full communication %d", v, f)
	}
}

// Abstract: "We outperform full communication at any fixed compression
// ratio for any communication budget." Checked at two budgets: the
// variable run's own total, and 40% of full communication's. At each,
// the variable schedule's accuracy (best validation epoch within the
// budget, mean of 3 seeds) beats full communication and every fixed ratio
// stopped at the same budget. It does NOT hold at every budget: at 20% of
// full communication's bytes the variable run is still early in training
// and fixed ratios 4–32 are ahead (docs/varco.md); this test pins the
// budgets where the claim holds.
func TestPaperVariableBeatsFixedRatiosAtEqualBudget(t *testing.T) {
	full := paperRuns(t, "none", "fixed:1")
	variable := paperRuns(t, "truncate", "linear:128:1:5")
	for _, budget := range []int64{variable[0].total(), full[0].total() * 2 / 5} {
		v := meanWithin(variable, budget)
		if f := meanWithin(full, budget); v <= f {
			t.Errorf("budget %d bytes: variable %.4f, full communication %.4f", budget, v, f)
		}
		for _, r := range paperFixed {
			sched := fmt.Sprintf("fixed:%g", r)
			if f := meanWithin(paperRuns(t, "truncate", sched), budget); v <= f {
				t.Errorf("budget %d bytes: variable %.4f, %s %.4f", budget, v, sched, f)
			}
		}
	}
}

// Abstract: the variable scheme "converges to a solution equivalent to
// the full communication case"; the convergence argument needs a
// monotonically decreasing schedule whose error vanishes, i.e. one that
// reaches r = 1. The authors' scripts stop at r_min = 1.5.
// With r_min = 1 the ratio falls monotonically and, once at 1, every
// epoch's exchange is exactly full communication's (same bytes); with
// r_min = 1.5 it never is. Reaching r = 1 is also no less accurate than
// stopping at 1.5 (mean of 3 seeds, 1 point tolerance).
func TestPaperScheduleReachingOneBecomesFullCommunication(t *testing.T) {
	full := paperRuns(t, "none", "fixed:1")[0]
	toOne := paperRuns(t, "truncate", "linear:128:1:5")
	toHalf := paperRuns(t, "truncate", "linear:128:1.5:5")
	fullEpoch := full.epochs[0].BytesFwd
	reached := -1
	for i, m := range toOne[0].epochs {
		if i > 0 && m.Ratio > toOne[0].epochs[i-1].Ratio {
			t.Fatalf("epoch %d: ratio rose from %g to %g", i+1, toOne[0].epochs[i-1].Ratio, m.Ratio)
		}
		if m.Ratio == 1 && reached < 0 {
			reached = i
		}
		if reached >= 0 && (m.BytesFwd != fullEpoch || m.BytesBwd != fullEpoch) {
			t.Fatalf("epoch %d at r = 1: %d/%d halo bytes, full communication %d", i+1, m.BytesFwd, m.BytesBwd, fullEpoch)
		}
	}
	if reached < 0 || reached > paperEpochs/4 {
		t.Fatalf("linear:128:1:5 reached r = 1 at epoch %d of %d", reached+1, paperEpochs)
	}
	for i, m := range toHalf[0].epochs {
		if m.BytesFwd >= fullEpoch {
			t.Fatalf("linear:128:1.5:5, epoch %d: %d halo bytes, as many as full communication", i+1, m.BytesFwd)
		}
	}
	if a, b := meanBest(toOne), meanBest(toHalf); a < b-0.01 {
		t.Errorf("r_min = 1: test accuracy %.4f; r_min = 1.5: %.4f", a, b)
	}
}
