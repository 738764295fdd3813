package stats

import (
	"math"
	"slices"
	"testing"
)

// same reports whether got and want are equal, NaN matching NaN.
func same(got, want float64) bool {
	return got == want || (math.IsNaN(got) && math.IsNaN(want))
}

func TestMeanStd(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name      string
		xs        []float64
		mean, std float64
	}{
		{"none", nil, nan, nan},
		{"one value has no spread", []float64{3}, 3, 0},
		{"sample deviation divides by n-1", []float64{80, 82}, 81, math.Sqrt2},
		{"constant", []float64{5, 5, 5, 5}, 5, 0},
		{"textbook", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7)},
		{"NaN propagates", []float64{1, nan}, nan, nan},
	} {
		m, s := MeanStd(c.xs)
		if !same(m, c.mean) || !same(s, c.std) {
			t.Errorf("%s: MeanStd(%v) = %v, %v; want %v, %v", c.name, c.xs, m, s, c.mean, c.std)
		}
		if got := Mean(c.xs); !same(got, c.mean) {
			t.Errorf("%s: Mean(%v) = %v, want %v", c.name, c.xs, got, c.mean)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, math.NaN()},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{0.2, 0.1}, 0.15000000000000002}, // (0.1 + 0.2) / 2 in float64 arithmetic
		{[]float64{-1, 7, 7, 100}, 7},
	} {
		in := slices.Clone(c.xs)
		if got := Median(c.xs); !same(got, c.want) {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("Median reordered its input: %v, was %v", c.xs, in)
		}
	}
}

func TestElementwiseMean(t *testing.T) {
	for _, c := range []struct {
		name string
		vs   [][]float64
		want []float64
	}{
		{"none", nil, nil},
		{"one vector is its own mean", [][]float64{{1, -2}}, []float64{1, -2}},
		{"coordinate by coordinate", [][]float64{{1, 10, 0}, {3, 20, 0}, {5, 30, 3}}, []float64{3, 20, 1}},
	} {
		if got := ElementwiseMean(c.vs); !slices.EqualFunc(got, c.want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
			t.Errorf("%s: ElementwiseMean(%v) = %v, want %v", c.name, c.vs, got, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("vectors of different lengths: no panic")
		}
	}()
	ElementwiseMean([][]float64{{1, 2}, {3}})
}
