package async

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/optim"
)

// Rule scales the learning rate of a gradient of staleness tau (≥ 0), or
// drops it.
type Rule struct {
	name  string
	scale func(tau int) float64
	// fresh drops every stale gradient (τ ≥ 1): only gradients of the
	// current parameters are applied.
	fresh bool
}

// Scale returns the factor of the learning rate for staleness tau (0 for
// a gradient the rule drops).
func (r Rule) Scale(tau int) float64 {
	if r.fresh && tau > 0 {
		return 0
	}
	if r.scale == nil {
		return 1
	}
	return r.scale(tau)
}

// Drops reports whether the rule drops a gradient of staleness tau: one
// it would apply at no learning rate.
func (r Rule) Drops(tau int) bool { return r.Scale(tau) == 0 }

func (r Rule) String() string {
	if r.name == "" {
		return "none"
	}
	return r.name
}

// ParseRule reads a staleness rule: "none" (factor 1), "inverse" (1/τ for
// τ ≥ 1, as in staleness-aware async SGD, Zhang et al. 2016; 1 for a fresh
// gradient), "linear:C" (1/(1+Cτ), C ≥ 0) or "drop" (a stale gradient is
// dropped, a fresh one keeps the learning rate: with several gradients an
// update, K-batch-sync SGD, Dutta et al. 2018).
func ParseRule(s string) (Rule, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	switch {
	case s == "none" || s == "":
		return Rule{name: "none"}, nil
	case s == "inverse":
		return Rule{name: s, scale: func(tau int) float64 { return 1 / float64(max(tau, 1)) }}, nil
	case s == "drop":
		return Rule{name: s, fresh: true}, nil
	case name == "linear" && hasArg:
		c, err := strconv.ParseFloat(arg, 64)
		if err != nil || c < 0 || math.IsInf(c, 0) || math.IsNaN(c) {
			return Rule{}, fmt.Errorf("staleness rule %q: C must be a number ≥ 0", s)
		}
		return Rule{name: s, scale: func(tau int) float64 { return 1 / (1 + c*float64(tau)) }}, nil
	}
	return Rule{}, fmt.Errorf("staleness rule %q: want none, inverse, linear:C or drop", s)
}

// Histogram counts staleness values exactly (they are small integers).
type Histogram struct {
	counts []int64 // counts[τ]
	n      int64
	sum    float64
}

// Add counts one value.
func (h *Histogram) Add(tau int) { h.addN(tau, 1) }

func (h *Histogram) addN(tau int, n int64) {
	if n == 0 {
		return
	}
	if tau >= len(h.counts) {
		h.counts = append(h.counts, make([]int64, tau+1-len(h.counts))...)
	}
	h.counts[tau] += n
	h.n += n
	h.sum += float64(tau) * float64(n)
}

// Merge adds o's counts.
func (h *Histogram) Merge(o *Histogram) {
	for tau, c := range o.counts {
		h.addN(tau, c)
	}
}

// Sub removes o's counts, which h must contain (the counts of an interval
// from two running totals).
func (h *Histogram) Sub(o *Histogram) {
	for tau, c := range o.counts {
		h.addN(tau, -c)
	}
}

// Count is the number of values.
func (h *Histogram) Count() int64 { return h.n }

// Mean is the mean value (0 when empty).
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile is the smallest value v with at least a fraction q of the
// values ≤ v (0 when empty).
func (h *Histogram) Quantile(q float64) int {
	need := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for tau, c := range h.counts {
		seen += c
		if seen >= max(need, 1) {
			return tau
		}
	}
	return 0
}

// Max is the largest value (0 when empty).
func (h *Histogram) Max() int {
	for tau := len(h.counts) - 1; tau >= 0; tau-- {
		if h.counts[tau] > 0 {
			return tau
		}
	}
	return 0
}

// Counts returns a copy of the counts by value.
func (h *Histogram) Counts() []int64 { return slices.Clone(h.counts) }

// Settings are what every server applies to every update.
type Settings struct {
	Optimizer nn.OptimizerConfig
	Rule      Rule
	// MaxStaleness drops a gradient whose staleness exceeds it; negative
	// keeps every gradient.
	MaxStaleness int
	// PerUpdate is how many gradients make one update (0 or 1: each is
	// one): the shard sums the gradients it keeps, each weighted by the
	// rule's factor of its staleness, and applies the sum over PerUpdate
	// as one update, at the learning rate (and schedule) unscaled.
	// Staleness counts updates.
	PerUpdate int
}

// param is one parameter a shard holds.
type param struct {
	value []float32
	decay float64
	state *optim.State[float32]
}

// Shard is one server's part of the parameters: whole parameters, their
// optimiser state and the shard's version, the number of updates applied.
type Shard struct {
	settings Settings
	params   []param
	size     int
	version  int
	hist     Histogram
	dropped  int64
	sum      []float32 // PerUpdate > 1: the weighted gradients kept for the next update
	summed   int       // how many
}

// NewShard returns a shard holding copies of values (with their weight
// decays) at version 0.
func NewShard(s Settings, values [][]float32, decays []float64) (*Shard, error) {
	if s.Optimizer.Schedule == nil {
		s.Optimizer.Schedule = nn.Constant{}
	}
	lr := s.Optimizer.LR
	if lr <= 0 || math.IsNaN(lr) || math.IsInf(lr, 0) {
		return nil, fmt.Errorf("async: learning rate %v; want a positive number", lr)
	}
	if s.PerUpdate < 0 {
		return nil, fmt.Errorf("async: %d gradients an update; want 1 or more", s.PerUpdate)
	}
	rule := optim.Config{Rule: s.Optimizer.Algorithm, Momentum: s.Optimizer.Momentum, Nesterov: s.Optimizer.Nesterov,
		Beta1: s.Optimizer.Beta1, Beta2: s.Optimizer.Beta2, Eps: s.Optimizer.Eps}
	if err := rule.Check(); err != nil {
		return nil, err
	}
	sh := &Shard{settings: s}
	for i, v := range values {
		sh.params = append(sh.params, param{value: slices.Clone(v), decay: decays[i], state: optim.NewState[float32](rule, len(v))})
		sh.size += len(v)
	}
	return sh, nil
}

// Version is the number of updates applied.
func (s *Shard) Version() int { return s.version }

// Size is the number of values the shard holds.
func (s *Shard) Size() int { return s.size }

// Apply applies a gradient (the shard's parameters' gradients,
// concatenated) computed from version `from`, or keeps it for the next
// update when Settings.PerUpdate is above 1. It returns the staleness,
// and false if the gradient was dropped for being too stale.
func (s *Shard) Apply(grad []float32, from int) (tau int, applied bool, err error) {
	if len(grad) != s.size {
		return 0, false, fmt.Errorf("async: a gradient of %d values for a shard of %d", len(grad), s.size)
	}
	if from < 0 || from > s.version {
		return 0, false, fmt.Errorf("async: a gradient from version %d of a shard at version %d", from, s.version)
	}
	tau = s.version - from
	s.hist.Add(tau)
	rule := s.settings.Rule
	if s.settings.MaxStaleness >= 0 && tau > s.settings.MaxStaleness || rule.Drops(tau) {
		s.dropped++
		return tau, false, nil
	}
	o := s.settings.Optimizer
	lr := o.LR * o.Schedule.Factor(s.version)
	if k := s.settings.PerUpdate; k > 1 {
		if s.sum == nil {
			s.sum = make([]float32, s.size)
		}
		w := float32(rule.Scale(tau))
		for i, g := range grad {
			s.sum[i] += w * g
		}
		if s.summed++; s.summed < k {
			return tau, true, nil
		}
		// The mean as syncStep takes it: summed, then scaled.
		inv := 1 / float32(k)
		for i := range s.sum {
			s.sum[i] *= inv
		}
		grad = s.sum
	} else {
		lr *= rule.Scale(tau)
	}
	t := applyTask{s: s, grad: grad, lr: lr}
	if s.size >= 1<<16 {
		// Parameters are independent: the update is the same bits on any
		// number of threads, and the server waits less.
		parallel.For(len(s.params), 1, t)
	} else {
		t.Run(0, len(s.params))
	}
	if s.summed > 0 {
		clear(s.sum)
		s.summed = 0
	}
	s.version++
	return tau, true, nil
}

// applyTask updates parameters [lo, hi) of a shard from grad.
type applyTask struct {
	s    *Shard
	grad []float32
	lr   float64
}

func (t applyTask) Run(lo, hi int) {
	off := 0
	for i, p := range t.s.params[:hi] {
		if i >= lo {
			p.state.Step(p.value, p.value, t.grad[off:off+len(p.value)], t.lr, p.decay)
		}
		off += len(p.value)
	}
}

// AppendValues appends the shard's parameter values, concatenated.
func (s *Shard) AppendValues(dst []float32) []float32 {
	for _, p := range s.params {
		dst = append(dst, p.value...)
	}
	return dst
}

// Counters are a shard's (or several shards') figures since the start.
type Counters struct {
	Staleness Histogram // of every gradient received, dropped or not
	Dropped   int64     // gradients dropped for their staleness
	Updates   int64     // updates applied (each the mean of several gradients in Sync, and with Settings.PerUpdate)
	Pushes    int64     // gradients kept, applied or summed for an update, which make the epochs (Serve's count; those dropped are in Dropped)
	EpochSize int64     // gradients in an epoch, 0 until every worker has said (Serve's)
	// BytesGrad is the payload bytes of every push request received (the
	// gradient and its 9-byte header, also for a push answered with stop
	// and ignored), BytesParams of every reply carrying the parameters
	// (the 25-byte header and the values, the answers to the first pulls
	// included): the messages as they went through the communicator
	// (Serve's).
	BytesGrad, BytesParams int64
}

// add adds o's figures, the largest EpochSize kept (a sum over servers).
func (c *Counters) add(o Counters) {
	c.Staleness.Merge(&o.Staleness)
	c.Dropped += o.Dropped
	c.Updates += o.Updates
	c.Pushes += o.Pushes
	c.EpochSize = max(c.EpochSize, o.EpochSize)
	c.BytesGrad += o.BytesGrad
	c.BytesParams += o.BytesParams
}

// since is c's figures since prev, earlier counters of the same servers
// (EpochSize and Pushes as in c).
func (c Counters) since(prev Counters) Counters {
	d := c
	d.Staleness = Histogram{}
	d.Staleness.Merge(&c.Staleness)
	d.Staleness.Sub(&prev.Staleness)
	d.Dropped -= prev.Dropped
	d.Updates -= prev.Updates
	d.BytesGrad -= prev.BytesGrad
	d.BytesParams -= prev.BytesParams
	return d
}

// Counters returns a copy of the shard's figures.
func (s *Shard) Counters() Counters {
	c := Counters{Dropped: s.dropped, Updates: int64(s.version)}
	c.Staleness.Merge(&s.hist)
	return c
}

// Plan assigns parameters to shards: the largest first, each to the shard
// with the fewest values so far (ties to the lowest), so that the servers
// hold about equal shares. Every rank computes the same plan from the
// parameters' sizes.
func Plan(sizes []int, shards int) [][]int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return sizes[b] - sizes[a] })
	load := make([]int, shards)
	plan := make([][]int, shards)
	for _, i := range order {
		s := 0
		for k := range load {
			if load[k] < load[s] {
				s = k
			}
		}
		plan[s] = append(plan[s], i)
		load[s] += sizes[i]
	}
	for _, p := range plan {
		slices.Sort(p)
	}
	return plan
}
