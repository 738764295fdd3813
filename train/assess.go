package train

import (
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/tensor"
)

// Metric names the validation measure that model selection and patience
// follow (with Config.SelectByLoss off).
type Metric string

const (
	// Accuracy is the fraction of rows whose highest logit is their label.
	Accuracy Metric = "acc"
	// ROCAUC is the area under the ROC curve of a binary task, the class-1
	// logit minus the class-0 logit ranking the rows.
	ROCAUC Metric = "auc"
	// MacroF1 is the unweighted mean over classes of F1.
	MacroF1 Metric = "f1"
)

// ParseMetric checks a metric name; "" is Accuracy.
func ParseMetric(s string) (Metric, error) {
	switch m := Metric(s); m {
	case "":
		return Accuracy, nil
	case Accuracy, ROCAUC, MacroF1:
		return m, nil
	}
	return "", fmt.Errorf("metric %q: want acc, auc or f1", s)
}

// Assessment is what a worker's evaluation contributes beyond its correct
// counts: the sums behind macro-F1 and, on a binary task, the scores
// behind ROC-AUC.
type Assessment struct {
	// Classes holds, for the validation rows and then the test rows, each
	// class's true positives, predictions and labelled rows: 3·K sums
	// each, so 6·K in all, that add up over workers.
	Classes []float64
	// ValScores and TestScores are, when the model has two outputs, each
	// row's score (class-1 logit minus class-0 logit) and whether its
	// label is 1.
	ValScores, TestScores []Scored
}

// Scored is one row's score and whether it is a positive.
type Scored struct {
	Score    float32
	Positive bool
}

// Assess computes the Assessment of logits over the validation and test
// rows. Predictions are the highest logit, the first on ties, as in
// nn.Correct.
func Assess(logits *tensor.Matrix, labels []int32, val, test []int32) Assessment {
	k := logits.Cols
	a := Assessment{Classes: make([]float64, 6*k)}
	for i, rows := range [][]int32{val, test} {
		c := a.Classes[3*k*i : 3*k*(i+1)]
		for _, r := range rows {
			best := tensor.Argmax(logits.Row(int(r)))
			y := int(labels[r])
			if y == best {
				c[3*best]++
			}
			c[3*best+1]++
			if y >= 0 && y < k {
				c[3*y+2]++
			}
		}
	}
	if k == 2 {
		scores := func(rows []int32) []Scored {
			s := make([]Scored, len(rows))
			for i, r := range rows {
				row := logits.Row(int(r))
				s[i] = Scored{row[1] - row[0], labels[r] == 1}
			}
			return s
		}
		a.ValScores, a.TestScores = scores(val), scores(test)
	}
	return a
}

// macroF1 is the mean F1 over the classes that occur among the labels or
// the predictions (scikit-learn's average="macro"), from 3·K sums of true
// positives, predictions and labels; F1 of a class is 2·TP / (predicted +
// labelled). With no rows it is 0.
func macroF1(c []float64) float64 {
	var sum float64
	n := 0
	for j := 0; j+2 < len(c); j += 3 {
		tp, pred, labelled := c[j], c[j+1], c[j+2]
		if pred+labelled == 0 {
			continue
		}
		sum += 2 * tp / (pred + labelled)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// rocAUC is the area under the ROC curve of scores, computed exactly as
// the Mann-Whitney rank statistic: the fraction of (positive, negative)
// pairs in which the positive scores higher, ties counting one half. ok is
// false when the rows lack a positive or a negative, and the area is then
// undefined. scores is sorted in place.
func rocAUC(scores []Scored) (auc float64, ok bool) {
	slices.SortFunc(scores, func(a, b Scored) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return 0
	})
	var pos, neg, rankSum float64 // ranks are 1-based; ties share their mean rank
	for i := 0; i < len(scores); {
		j := i
		var p float64
		for ; j < len(scores) && scores[j].Score == scores[i].Score; j++ {
			if scores[j].Positive {
				p++
			}
		}
		mean := float64(i+1+j) / 2
		rankSum += p * mean
		pos += p
		neg += float64(j-i) - p
		i = j
	}
	if pos == 0 || neg == 0 {
		return 0, false
	}
	return (rankSum - pos*(pos+1)/2) / (pos * neg), true
}
