package gradcomp

import (
	"slices"
	"testing"
)

// Resharing keeps what the workers owe the sum, the total of their
// residuals, and every worker's copy of state that is the same on all.
func TestReshareKeepsTheOwedTotal(t *testing.T) {
	states := [][]Tensor{
		{{"residual", []float32{1, 2}}, {"q0", []float32{7, 8, 9}}},
		{{"residual", []float32{10, 20}}, {"q0", []float32{7, 8, 9}}},
		{{"residual", []float32{100, 200}}, {"q0", []float32{7, 8, 9}}},
	}
	for _, to := range []int{1, 2, 5} {
		out, err := Reshare(states, to)
		if err != nil || len(out) != to {
			t.Fatalf("to %d: %d states, %v", to, len(out), err)
		}
		total := make([]float32, 2)
		for r, s := range out {
			for j, v := range s[0].Data {
				total[j] += v
			}
			if !slices.Equal(s[1].Data, []float32{7, 8, 9}) {
				t.Errorf("to %d: worker %d's q0 %v", to, r, s[1].Data)
			}
		}
		if !slices.Equal(total, []float32{111, 222}) {
			t.Errorf("to %d: residuals total %v, want [111 222]", to, total)
		}
	}
	if _, err := Reshare([][]Tensor{{{"mystery", []float32{1}}}}, 2); err == nil {
		t.Error("an unknown state name was reshared")
	}
	if _, err := Reshare([][]Tensor{{{"residual", []float32{1}}}, {{"residual", []float32{1, 2}}}}, 2); err == nil {
		t.Error("workers' states of different lengths were reshared")
	}
}

// Every method's state, reshared from three workers to two, restores into
// the method on two workers: the names and lengths it keeps are the ones
// Reshare knows.
func TestReshareRestoresIntoMethods(t *testing.T) {
	shapes := []Shape{{Rows: 4, Cols: 5}}
	for _, spec := range []string{"topk:0.1", "topk:0.1,scaled", "powersgd:2", "quant4"} {
		old := make([][]Tensor, 3)
		for r := range old {
			m, err := New(spec, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Init(shapes, 3); err != nil {
				t.Fatal(err)
			}
			old[r] = m.State()
			for i := range old[r] {
				for j := range old[r][i].Data {
					old[r][i].Data[j] = float32(r + j)
				}
			}
		}
		out, err := Reshare(old, 2)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		for r := range out {
			m, _ := New(spec, Options{Seed: 1})
			if err := m.Init(shapes, 2); err != nil {
				t.Fatal(err)
			}
			if err := m.Restore(out[r]); err != nil {
				t.Fatalf("%s: worker %d restores its reshared state: %v", spec, r, err)
			}
		}
	}
}

// Scaled top-k's average of squared gradients is each worker's estimate:
// every new worker takes the mean; its step count is every worker's.
func TestReshareAveragesTheSquares(t *testing.T) {
	states := [][]Tensor{
		{{"gradsq", []float32{1, 4}}, {"gradsq-steps", []float32{5}}},
		{{"gradsq", []float32{3, 8}}, {"gradsq-steps", []float32{5}}},
	}
	out, err := Reshare(states, 3)
	if err != nil {
		t.Fatal(err)
	}
	for r, s := range out {
		if !slices.Equal(s[0].Data, []float32{2, 6}) || !slices.Equal(s[1].Data, []float32{5}) {
			t.Errorf("worker %d: %v", r, s)
		}
	}
}
