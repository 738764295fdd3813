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
// worker takes the first's, as it takes the step count of scaled top-k's
// average of squared gradients; that average is each worker's own
// estimate, and every new worker takes their mean. A name it does not
// know is an error rather than a guess.
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
		k, err := kindOf(t.Name)
		if err != nil {
			return nil, err
		}
		for r := range out {
			data := make([]float32, len(t.Data))
			switch {
			case k == shared:
				copy(data, t.Data)
			case k == owed && r == 0:
				for _, s := range states { // in rank order, as the reductions add
					for j, v := range s[i].Data {
						data[j] += v
					}
				}
			case k == averaged:
				for j := range data {
					sum := 0.0
					for _, s := range states {
						sum += float64(s[i].Data[j])
					}
					data[j] = float32(sum / float64(len(states)))
				}
			}
			out[r] = append(out[r], Tensor{Name: t.Name, Data: data})
		}
	}
	return out, nil
}

// How a state tensor is reshared.
type kind int

const (
	owed     kind = iota // a worker's share of a sum: the first takes the total
	shared               // the same on every worker: every one takes the first's
	averaged             // a worker's estimate: every one takes the mean
)

// kindOf says how the state tensor of that name is reshared: a residual
// and DGC's velocity are owed, PowerSGD's factors q0, q1, ... and scaled
// top-k's step count shared, its average of squared gradients averaged.
func kindOf(name string) (kind, error) {
	switch {
	case name == "residual" || name == "velocity":
		return owed, nil
	case name == "gradsq-steps",
		len(name) > 1 && name[0] == 'q' && strings.Trim(name[1:], "0123456789") == "":
		return shared, nil
	case name == "gradsq":
		return averaged, nil
	}
	return owed, fmt.Errorf("gradcomp: no rule to reshare state %q among a different number of workers", name)
}
