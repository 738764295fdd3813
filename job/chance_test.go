package job

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/metrics"
)

// The watch warns once, after chanceEpochs consecutive epochs that score no
// better than predicting the training labels' class shares, and never for
// a run that learns.
func TestChanceWatch(t *testing.T) {
	balanced := []int32{0, 1, 2, 3, 0, 1, 2, 3}
	skewed := []int32{0, 0, 0, 1} // entropy 0.5623, majority 0.75
	all := func(n int) []int32 {
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(i)
		}
		return v
	}
	h4 := math.Log(4)
	hSkewed := -(0.75*math.Log(0.75) + 0.25*math.Log(0.25))
	epochs := func(loss, acc float64, n int) []metrics.Epoch {
		var es []metrics.Epoch
		for i := range n {
			es = append(es, metrics.Epoch{Epoch: i + 1, Loss: loss, TrainAcc: acc, Evaluated: true})
		}
		return es
	}
	falling := func(loss, factor float64, n int) []metrics.Epoch {
		var es []metrics.Epoch
		for i := range n {
			es = append(es, metrics.Epoch{Epoch: i + 1, Loss: loss, TrainAcc: 0.25, Evaluated: true})
			loss *= factor
		}
		return es
	}
	unevaluated := func(loss float64, n int) []metrics.Epoch {
		var es []metrics.Epoch
		for i := range n {
			es = append(es, metrics.Epoch{Epoch: i + 1, Loss: loss})
		}
		return es
	}
	for _, tc := range []struct {
		name   string
		labels []int32
		epochs []metrics.Epoch
		warns  bool
	}{
		{"stuck at ln C", balanced, epochs(h4, 0.25, chanceEpochs), true},
		{"one epoch short", balanced, epochs(h4, 0.25, chanceEpochs-1), false},
		{"worse than chance", balanced, epochs(3*h4, 0.25, chanceEpochs+3), true},
		{"loss below the entropy", balanced, epochs(0.9*h4, 0.25, 20), false},
		{"accuracy above the majority", balanced, epochs(h4, 0.5, 20), false},
		{"skewed labels: their entropy, not ln C", skewed, epochs(hSkewed, 0.75, chanceEpochs), true},
		{"skewed labels below their entropy", skewed, epochs(0.95*hSkewed, 0.75, 20), false},
		{"interrupted run", balanced, append(append(epochs(h4, 0.25, chanceEpochs-1), metrics.Epoch{Loss: 0.5, TrainAcc: 0.9, Evaluated: true}), epochs(h4, 0.25, chanceEpochs-1)...), false},
		{"loss still falling", balanced, falling(2*h4, 0.95, 20), false},
		{"loss falling, then flat", balanced, append(falling(2*h4, 0.95, 3), epochs(1.2*h4, 0.25, chanceEpochs)...), true},
		{"epochs not evaluated carry no accuracy", balanced, unevaluated(h4, chanceEpochs+3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			w := newChanceWatch(tc.labels, all(len(tc.labels)), 4, &log)
			for _, e := range tc.epochs {
				w.observe(e)
			}
			if tc.warns {
				w.observe(tc.epochs[len(tc.epochs)-1]) // at most one warning
			}
			if got := strings.Count(log.String(), "at chance"); got != map[bool]int{false: 0, true: 1}[tc.warns] {
				t.Fatalf("%d warnings, want warns=%v: %q", got, tc.warns, log.String())
			}
		})
	}
	if w := newChanceWatch(nil, []int32{0}, 4, &bytes.Buffer{}); w != nil {
		t.Error("a watch without labels")
	}
	var nilWatch *chanceWatch
	nilWatch.observe(metrics.Epoch{}) // a nil watch ignores epochs
}
