package metrics

import (
	"math"
	"testing"
)

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want Spread
	}{
		{"empty", nil, Spread{}},
		{"all zero", []float64{0, 0}, Spread{}},
		{"even", []float64{2, 2, 2}, Spread{CV: 0, Imbalance: 1, Efficiency: 1}},
		// mean 2, population std 1, max 3
		{"one and three", []float64{1, 3}, Spread{CV: 0.5, Imbalance: 1.5, Efficiency: 2.0 / 3}},
		// mean 1, std sqrt(3), max 4
		{"one busy of four", []float64{4, 0, 0, 0}, Spread{CV: math.Sqrt(3), Imbalance: 4, Efficiency: 0.25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SpreadOf(tt.xs)
			if !near(got.CV, tt.want.CV) || !near(got.Imbalance, tt.want.Imbalance) || !near(got.Efficiency, tt.want.Efficiency) {
				t.Errorf("SpreadOf(%v) = %+v, want %+v", tt.xs, got, tt.want)
			}
		})
	}
}

func TestNewBalance(t *testing.T) {
	tests := []struct {
		name    string
		sizes   []int64
		compute []float64
		want    Balance
		wantErr string
	}{
		{"sizes only", []int64{100, 300}, nil, Balance{Workers: 2, Size: Spread{CV: 0.5, Imbalance: 1.5, Efficiency: 2.0 / 3}}, ""},
		{"compute only", nil, []float64{2, 2}, Balance{Workers: 2, Compute: Spread{Imbalance: 1, Efficiency: 1}}, ""},
		{"both", []int64{5, 5}, []float64{1, 3},
			Balance{Workers: 2, Size: Spread{Imbalance: 1, Efficiency: 1}, Compute: Spread{CV: 0.5, Imbalance: 1.5, Efficiency: 2.0 / 3}}, ""},
		{"lengths differ", []int64{1, 2, 3}, []float64{1, 2}, Balance{}, "3 part sizes but compute times of 2 workers"},
		{"negative size", []int64{1, -2}, nil, Balance{}, "part 1 has negative size"},
		{"NaN compute", nil, []float64{math.NaN()}, Balance{}, "worker 0 has compute time NaN"},
		{"infinite compute", nil, []float64{1, math.Inf(1)}, Balance{}, "worker 1 has compute time +Inf"},
		{"negative compute", nil, []float64{-1}, Balance{}, "worker 0 has compute time -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewBalance(tt.sizes, tt.compute)
			if !errorAsWanted(t, err, tt.wantErr) {
				return
			}
			if got.Workers != tt.want.Workers || !sameSpread(got.Size, tt.want.Size) || !sameSpread(got.Compute, tt.want.Compute) {
				t.Errorf("NewBalance = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The compute imbalance of a run's totals is its worker_imbalance.
func TestBalanceMatchesWorkerImbalance(t *testing.T) {
	tot := Totals{WorkerCompute: []float64{3, 5, 4}}
	b, err := NewBalance(nil, tot.WorkerCompute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Compute.Imbalance != tot.WorkerImbalance() || !near(tot.WorkerImbalance(), 1.25) {
		t.Errorf("balance %g, worker_imbalance %g, want both 1.25", b.Compute.Imbalance, tot.WorkerImbalance())
	}
}

func sameSpread(a, b Spread) bool {
	return near(a.CV, b.CV) && near(a.Imbalance, b.Imbalance) && near(a.Efficiency, b.Efficiency)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }
