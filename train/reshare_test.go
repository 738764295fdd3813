package train

import (
	"slices"
	"testing"

	"github.com/graft-gnn/graft/checkpoint"
)

// A checkpoint's compression state of 3 workers becomes that of 2: the
// residuals' total is kept (all of it with the first worker), the tensors
// that are not compression state are left as they were.
func TestReshareStateKeepsTheTotal(t *testing.T) {
	s := &checkpoint.State{Tensors: []checkpoint.Tensor{
		{Name: "param/w", Shape: []int{2}, Data: []float32{5, 6}},
		{Name: stateName(0, "residual"), Shape: []int{2}, Data: []float32{1, 2}},
		{Name: stateName(1, "residual"), Shape: []int{2}, Data: []float32{3, 4}},
		{Name: stateName(2, "residual"), Shape: []int{2}, Data: []float32{5, 6}},
	}}
	if err := ReshareState(s, 3, 2); err != nil {
		t.Fatal(err)
	}
	if w := s.Tensor("param/w"); w == nil || !slices.Equal(w.Data, []float32{5, 6}) {
		t.Fatalf("param/w after resharing: %+v", w)
	}
	r0, r1, r2 := s.Tensor(stateName(0, "residual")), s.Tensor(stateName(1, "residual")), s.Tensor(stateName(2, "residual"))
	if r0 == nil || r1 == nil || r2 != nil || !slices.Equal(r0.Data, []float32{9, 12}) || !slices.Equal(r1.Data, []float32{0, 0}) {
		t.Fatalf("residuals after resharing 3 workers' to 2: %+v, %+v, %+v", r0, r1, r2)
	}
	if err := ReshareState(s, 1, 2); err == nil {
		t.Error("a checkpoint said to be of 1 worker holding rank 1's state was reshared")
	}
}
