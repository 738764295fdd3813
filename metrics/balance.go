package metrics

import (
	"fmt"
	"math"
)

// Spread describes how unevenly one quantity is spread over workers.
type Spread struct {
	// CV is the coefficient of variation: the standard deviation over the
	// workers (all of them, a population, not a sample) divided by the mean.
	// It sees every worker's deviation, where Imbalance sees only the worst.
	CV float64 `json:"cv"`
	// Imbalance is max/mean (1: perfectly even). In a synchronous step every
	// worker waits for the slowest, so this is the factor the step takes
	// over a perfectly balanced one.
	Imbalance float64 `json:"imbalance"`
	// Efficiency is 1/Imbalance, mean/max: the share of the slowest
	// worker's time the average worker spends working rather than waiting.
	Efficiency float64 `json:"efficiency"`
}

// SpreadOf measures xs; all three figures are 0 when there is nothing to
// compare (no values, or a mean of zero).
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	var sum, most float64
	for _, x := range xs {
		sum += x
		most = max(most, x)
	}
	mean := sum / float64(len(xs))
	if mean <= 0 {
		return Spread{}
	}
	var sq float64
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	s := Spread{
		CV:        math.Sqrt(sq/float64(len(xs))) / mean,
		Imbalance: most / mean,
	}
	s.Efficiency = 1 / s.Imbalance
	return s
}

// Balance is the load balance of a partition-parallel run: how evenly
// the partition spread the graph (part sizes) and how evenly the work
// actually fell (compute time). A partition balanced in nodes can still be
// unbalanced in edges, and so in time; comparing the two spreads shows
// which size predicts the time.
type Balance struct {
	Workers int    `json:"workers"`
	Size    Spread `json:"size"`    // nodes or edges per worker
	Compute Spread `json:"compute"` // compute seconds per worker
}

// NewBalance measures part sizes (nodes or edges per worker, by rank) and
// per-worker compute seconds (such as Totals.WorkerCompute). Either may be
// nil when unknown; when both are given they must have one entry per
// worker. Negative or non-finite values are errors.
func NewBalance(sizes []int64, compute []float64) (Balance, error) {
	if sizes != nil && compute != nil && len(sizes) != len(compute) {
		return Balance{}, fmt.Errorf("metrics: %d part sizes but compute times of %d workers", len(sizes), len(compute))
	}
	size := make([]float64, len(sizes))
	for i, s := range sizes {
		if s < 0 {
			return Balance{}, fmt.Errorf("metrics: part %d has negative size %d", i, s)
		}
		size[i] = float64(s)
	}
	for i, c := range compute {
		if !(c >= 0) || math.IsInf(c, 1) {
			return Balance{}, fmt.Errorf("metrics: worker %d has compute time %g (want a finite value ≥ 0)", i, c)
		}
	}
	return Balance{
		Workers: max(len(sizes), len(compute)),
		Size:    SpreadOf(size),
		Compute: SpreadOf(compute),
	}, nil
}
