package gradcomp

import (
	"fmt"
	"strings"
)

// Reshare turns the compression state of from workers, states[r] as
// worker r's State returned it, into the state of to workers, for a run
// resumed on a different number of workers. A residual (and DGC's
// velocity) is its worker's share of what the workers owe the sum: the
// gradient not yet sent. What matters is their total, so the first new
// worker takes the total and the others start at zero, and the owed
// gradient still arrives, once. PowerSGD's warm-start factors are the
// same on every worker (they come out of all-reduces), and each new
// worker takes the first's. A name it does not know is an error rather
// than a guess.
func Reshare(states [][]Tensor, to int) ([][]Tensor, error) {
	if len(states) == 0 || to < 1 {
		return nil, fmt.Errorf("gradcomp: reshare the state of %d workers among %d", len(states), to)
	}
	first := states[0]
	for r, s := range states {
		if len(s) != len(first) {
			return nil, fmt.Errorf("gradcomp: worker %d has %d state tensors, worker 0 %d", r, len(s), len(first))
		}
		for i, t := range s {
			if t.Name != first[i].Name || len(t.Data) != len(first[i].Data) {
				return nil, fmt.Errorf("gradcomp: worker %d's state tensor %d is %q of %d values, worker 0's %q of %d", r, i, t.Name, len(t.Data), first[i].Name, len(first[i].Data))
			}
		}
	}
	out := make([][]Tensor, to)
	for i, t := range first {
		shared, err := isShared(t.Name)
		if err != nil {
			return nil, err
		}
		for r := range out {
			data := make([]float32, len(t.Data))
			switch {
			case shared:
				copy(data, t.Data)
			case r == 0:
				for _, s := range states { // in rank order, as the reductions add
					for j, v := range s[i].Data {
						data[j] += v
					}
				}
			}
			out[r] = append(out[r], Tensor{Name: t.Name, Data: data})
		}
	}
	return out, nil
}

// isShared says whether the state tensor of that name is the same on every
// worker (PowerSGD's factors q0, q1, ...) or a worker's share of a sum
// (residual, velocity).
func isShared(name string) (bool, error) {
	switch {
	case name == "residual" || name == "velocity":
		return false, nil
	case len(name) > 1 && name[0] == 'q' && strings.Trim(name[1:], "0123456789") == "":
		return true, nil
	}
	return false, fmt.Errorf("gradcomp: no rule to reshare state %q among a different number of workers", name)
}
