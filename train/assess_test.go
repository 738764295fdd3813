package train

import (
	"math"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/tensor"
)

func scored(pos, neg []float32) []Scored {
	var s []Scored
	for _, v := range pos {
		s = append(s, Scored{v, true})
	}
	for _, v := range neg {
		s = append(s, Scored{v, false})
	}
	return s
}

// ROC-AUC against pairs counted by hand: wins of a positive over a
// negative, ties counting one half, over all pairs.
func TestROCAUC(t *testing.T) {
	tests := []struct {
		name     string
		pos, neg []float32
		want     float64
		ok       bool
	}{
		{"separated", []float32{0.9, 0.8}, []float32{0.1, 0.2}, 1, true},
		{"inverted", []float32{0.1}, []float32{0.9, 0.5}, 0, true},
		{"one tie", []float32{0.5}, []float32{0.5}, 0.5, true},
		// 0.8 beats all three (3); 0.4 loses to 0.6, ties 0.4, beats 0.2 (1.5): 4.5 of 6.
		{"mixed with a tie", []float32{0.8, 0.4}, []float32{0.6, 0.4, 0.2}, 0.75, true},
		// Every score equal: all ties.
		{"all tied", []float32{1, 1, 1}, []float32{1, 1}, 0.5, true},
		// 3 beats all three (3), 0 ties 0 and beats -1 and -2 (2.5), -2 ties -2 (0.5): 6 of 9.
		{"ties among many", []float32{3, 0, -2}, []float32{0, -1, -2}, 6.0 / 9, true},
		{"no negatives", []float32{1, 2}, nil, 0, false},
		{"no positives", nil, []float32{1}, 0, false},
	}
	for _, tc := range tests {
		got, ok := rocAUC(scored(tc.pos, tc.neg))
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s: AUC %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Macro-F1 through Assess, against per-class F1 by hand.
func TestAssessMacroF1(t *testing.T) {
	// Labels 0 0 1 1 2 predicted as 0 1 1 1 0 (the highest logit; row 4
	// ties classes 0 and 3 and takes the first). Class 0: TP 1 of 2
	// predicted and 2 labelled, F1 2/4; class 1: TP 2, 3 predicted, 2
	// labelled, F1 4/5; class 2: none predicted, F1 0; class 3 occurs
	// nowhere and is left out: (0.5 + 0.8 + 0) / 3.
	logits := tensor.FromSlice(5, 4, []float32{
		1, 0, 0, 0,
		0, 1, 0, 0,
		0, 2, 1, 0,
		0, 1, 0, 0,
		1, 0, 0, 1,
	})
	labels := []int32{0, 0, 1, 1, 2}
	a := Assess(logits, labels, []int32{0, 1, 2, 3, 4}, []int32{2, 3})
	if got, want := macroF1(a.Classes[:12]), (0.5+0.8)/3; math.Abs(got-want) > 1e-15 {
		t.Errorf("validation macro-F1 %v, want %v", got, want)
	}
	// Test rows 2 and 3: both class 1, both right: F1 1 for the one class.
	if got := macroF1(a.Classes[12:]); got != 1 {
		t.Errorf("test macro-F1 %v, want 1", got)
	}
	if a.ValScores != nil {
		t.Errorf("scores on a 4-class task")
	}
	if got := macroF1(make([]float64, 6)); got != 0 {
		t.Errorf("macro-F1 of no rows %v", got)
	}
}

func TestAssessBinaryScores(t *testing.T) {
	logits := tensor.FromSlice(3, 2, []float32{0, 2, 1, 0.5, 3, 3})
	a := Assess(logits, []int32{1, 0, 1}, []int32{0, 1, 2}, nil)
	want := []Scored{{2, true}, {-0.5, false}, {0, true}}
	for i, s := range a.ValScores {
		if s != want[i] {
			t.Errorf("score %d = %+v, want %+v", i, s, want[i])
		}
	}
	if auc, ok := rocAUC(a.ValScores); !ok || auc != 1 {
		t.Errorf("AUC %v, %v; want 1", auc, ok)
	}
}

func TestParseMetric(t *testing.T) {
	for in, want := range map[string]Metric{"": Accuracy, "acc": Accuracy, "auc": ROCAUC, "f1": MacroF1} {
		if got, err := ParseMetric(in); err != nil || got != want {
			t.Errorf("ParseMetric(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMetric("roc"); err == nil {
		t.Error("ParseMetric(roc) succeeded")
	}
}

// Workers holding parts of the scores, of different sizes (one none at
// all), get the ROC-AUC of all the scores together, every one of them.
func TestAUCGatheredOverWorkers(t *testing.T) {
	all := scored([]float32{0.9, 0.4, 0.4, 0.1, 0.7}, []float32{0.4, 0.2, 0.8, 0.3})
	shares := [][]Scored{all[:4], nil, all[4:]}
	// Validation: every score; test: the first half of each share, so
	// 0.9+ 0.4+ from rank 0 and 0.7+ 0.4- from rank 2: of the three
	// pairs, 0.9 and 0.7 win and 0.4 ties, 2.5 of 3.
	wantVal, _ := rocAUC(append([]Scored(nil), all...))
	const wantTest = 2.5 / 3
	got := make([][2]float64, len(shares))
	defined := make([][2]bool, len(shares))
	err := comm.Run(len(shares), func(c comm.Communicator) error {
		l := &Loop{cfg: Config{Reducer: &CommReducer{Comm: c}}}
		mine := shares[c.Rank()]
		val, test, ok, err := l.aucs(Assessment{ValScores: append([]Scored(nil), mine...), TestScores: mine[:len(mine)/2]})
		got[c.Rank()], defined[c.Rank()] = [2]float64{val, test}, ok
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, g := range got {
		if g[0] != wantVal || math.Abs(g[1]-wantTest) > 1e-15 || defined[r] != [2]bool{true, true} {
			t.Errorf("rank %d: AUCs %v (defined %v), want %v and %v", r, g, defined[r], wantVal, wantTest)
		}
	}
	if wantVal != 0.6 { // 12 of 20 pairs, by hand: 0.9 beats 4, each 0.4 beats 2 and ties 1, 0.1 none, 0.7 beats 3
		t.Errorf("AUC of all %v, want 0.6", wantVal)
	}
}

// A set that lacks one of the two classes has no ROC-AUC: the loop says
// it is undefined rather than 0, on one worker and over several where
// every worker's share lacks it (rank 1 holding no scores at all).
func TestAUCUndefinedWithOneClass(t *testing.T) {
	positives := scored([]float32{0.9, 0.4, 0.2}, nil)
	both := scored([]float32{0.9, 0.4}, []float32{0.3})
	l := &Loop{}
	if _, test, ok, err := l.aucs(Assessment{ValScores: both, TestScores: positives}); err != nil || ok != [2]bool{true, false} || test != 0 {
		t.Errorf("one worker: test AUC %v, defined %v, %v; want the validation set's defined and the test set's not", test, ok, err)
	}
	shares := [][]Scored{positives[:2], nil, positives[2:]}
	err := comm.Run(len(shares), func(c comm.Communicator) error {
		l := &Loop{cfg: Config{Reducer: &CommReducer{Comm: c}}}
		mine := shares[c.Rank()]
		_, _, ok, err := l.aucs(Assessment{ValScores: mine, TestScores: append([]Scored(nil), mine...)})
		if err == nil && ok != [2]bool{} {
			t.Errorf("rank %d: defined %v over shares of one class", c.Rank(), ok)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
