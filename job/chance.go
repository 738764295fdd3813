package job

import (
	"fmt"
	"io"
	"math"

	"github.com/graft-gnn/graft/metrics"
)

// chanceWatch notices a model that predicts no better than chance and has
// stopped improving: over five evaluated epochs in a row, a training loss
// at or above the entropy of the training labels (what predicting their
// class shares for every node scores; ln C for C balanced classes) that
// did not fall, with a training accuracy no better than the largest
// class's share. Runs that stay there (dead ReLUs, weights decayed to zero,
// a step size that overshoots) seldom recover, so the user is told once,
// with what usually helps, instead of watching epochs of chance. A run
// whose loss is still falling, however slowly, is left alone.
type chanceWatch struct {
	entropy, majority float64 // of the training labels
	log               io.Writer
	losses            []float64 // of the consecutive evaluated epochs at chance
	warned            bool
}

// chanceEpochs is how many consecutive evaluated epochs at chance make a
// warning; chanceTolerance how far (relative) below the entropy the loss
// may be, and how much (relative) it must have fallen over those epochs
// to count as progress.
const (
	chanceEpochs    = 5
	chanceTolerance = 1e-3
	chanceProgress  = 0.01
)

// chanceWatch watches the leader's epochs.
func (s *Spec) chanceWatch(in *input, leader bool) *chanceWatch {
	if !leader {
		return nil
	}
	return newChanceWatch(in.problem.Labels, in.problem.Train, in.classes, s.Log)
}

// newChanceWatch returns a watch over the labels of the training nodes, or
// nil when there is nothing to watch (no labels).
func newChanceWatch(labels, train []int32, classes int, log io.Writer) *chanceWatch {
	if len(train) == 0 || classes < 2 || log == nil {
		return nil
	}
	counts := make([]int, classes)
	for _, v := range train {
		if int(v) >= len(labels) || labels[v] < 0 || int(labels[v]) >= classes {
			return nil
		}
		counts[labels[v]]++
	}
	w := &chanceWatch{log: log}
	n := float64(len(train))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			w.entropy -= p * math.Log(p)
			w.majority = max(w.majority, p)
		}
	}
	return w
}

// observe takes one epoch's metrics and warns once when the last
// chanceEpochs evaluated epochs were all at chance without progress.
// Epochs that were not evaluated (--eval-every) carry no training accuracy
// and are skipped.
func (w *chanceWatch) observe(e metrics.Epoch) {
	if w == nil || w.warned || !e.Evaluated {
		return
	}
	if e.Loss < (1-chanceTolerance)*w.entropy || e.TrainAcc > w.majority+0.01 {
		w.losses = w.losses[:0]
		return
	}
	w.losses = append(w.losses, e.Loss)
	if n := len(w.losses); n < chanceEpochs || e.Loss < (1-chanceProgress)*w.losses[n-chanceEpochs] {
		return
	}
	w.warned = true
	fmt.Fprintf(w.log, "graft train: %d epochs at chance (epoch %d: training loss %.4f, not below the training labels' entropy %.4f and not falling; training accuracy %.4f): try a lower --lr, less --dropout or --weight-decay, or --normalize\n",
		chanceEpochs, e.Epoch, e.Loss, w.entropy, e.TrainAcc)
}
