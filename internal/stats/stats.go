package stats

import (
	"math"
	"slices"
)

// Mean is the arithmetic mean of xs, or NaN for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// MeanStd returns the mean of xs and its sample standard deviation (divided
// by n − 1, as the tables that quote "mean ± std over seeds" mean). One value
// has no spread: its deviation is 0. None gives NaN for both.
func MeanStd(xs []float64) (mean, std float64) {
	mean = Mean(xs)
	if len(xs) < 2 {
		if len(xs) == 1 {
			return mean, 0
		}
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// Median is the middle of xs, the mean of the two middle values for an even
// count, or NaN for none. xs is left as it was.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}

// ElementwiseMean is the mean of equal-length vectors, coordinate by
// coordinate: the average of a set of parameter vectors, such as the one
// that consensus among agents converges to. It panics on vectors of
// different lengths, a caller's bug.
func ElementwiseMean(vs [][]float64) []float64 {
	if len(vs) == 0 {
		return nil
	}
	m := make([]float64, len(vs[0]))
	w := 1 / float64(len(vs))
	for _, v := range vs {
		if len(v) != len(m) {
			panic("stats: ElementwiseMean of vectors of different lengths")
		}
		for i, x := range v {
			m[i] += w * x
		}
	}
	return m
}
