package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// TestRowOpsMatchSerial checks the parallel bias add and bias gradient
// against the serial tensor functions on inputs large enough to split.
func TestRowOpsMatchSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, shape := range [][2]int{{3000, 37}, {1000, 128}, {70, 1000}, {5, 16}} {
		m := randomMatrix(shape[0], shape[1], rng)
		v := randomMatrix(1, shape[1], rng).Data
		want, got := m.Clone(), m.Clone()
		tensor.AddRowVector(want, v)
		addRowVector(got, v)
		for i := range want.Data {
			if want.Data[i] != got.Data[i] {
				t.Fatalf("%v: addRowVector element %d = %v, want %v", shape, i, got.Data[i], want.Data[i])
			}
		}
		sum, ref := make([]float32, shape[1]), make([]float32, shape[1])
		for i := range sum {
			sum[i] = 42 // overwritten, not accumulated
		}
		tensor.SumRows(ref, m)
		sumRows(sum, m)
		for j := range ref {
			if math.Abs(float64(sum[j]-ref[j])) > 1e-3*(1+math.Abs(float64(ref[j]))) {
				t.Fatalf("%v: sumRows column %d = %v, want %v", shape, j, sum[j], ref[j])
			}
		}
	}
}
