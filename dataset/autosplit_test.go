package dataset

import (
	"strings"
	"testing"

	"github.com/graft-gnn/graft/graph"
)

// TestAutoSplit: auto is the dataset's own split where it ships one, and a
// seeded stratified 60/20/20 where it does not; the split's name says which.
func TestAutoSplit(t *testing.T) {
	withSplit := coraForTest(t)
	without := coraForTest(t)
	without.Name, without.Splits = "cora-without-split", nil
	tests := []struct {
		name             string
		d                *Dataset
		spec             string
		want             string
		train, val, test int
	}{
		{"auto, shipped split", withSplit, "auto", "public", 140, 500, 1000},
		{"empty spec, shipped split", withSplit, "", "public", 140, 500, 1000},
		{"auto, no shipped split", without, "auto", AutoStratified, 1626, 542, 540},
		{"empty spec, no shipped split", without, "", AutoStratified, 1626, 542, 540},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.d.Split(tt.spec, 7)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != tt.want || len(s.Train) != tt.train || len(s.Val) != tt.val || len(s.Test) != tt.test {
				t.Errorf("split %s with %d/%d/%d nodes, want %s with %d/%d/%d", s.Name, len(s.Train), len(s.Val), len(s.Test), tt.want, tt.train, tt.val, tt.test)
			}
		})
	}
	again, err := without.Split("auto", 7)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := without.Split("frac:0.6:0.2", 7)
	if !slicesEqual(again.Train, first.Train) || !slicesEqual(again.Test, first.Test) {
		t.Error("auto differs from the frac:0.6:0.2 split of the same seed")
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSplitErrorsNameTheClass: a class too small for the requested split
// is named with its size, and no error suggests the split that failed.
func TestSplitErrorsNameTheClass(t *testing.T) {
	// Classes 0 and 1 have 10 nodes each, class 2 has 2, class 3 none.
	labels := make([]int32, 22)
	for i := range labels {
		labels[i] = int32(min(i/10, 2))
	}
	g, err := graph.FromEdges(len(labels), nil, nil, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	small := &Dataset{Name: "small", Graph: g, Labels: labels, NumClasses: 3, ClassNames: []string{"a", "b", "rare"}}
	empty := &Dataset{Name: "empty-class", Graph: g, Labels: labels, NumClasses: 4, ClassNames: []string{"a", "b", "rare", "ghost"}}
	numbered := &Dataset{Name: "numbered", Graph: g, Labels: labels, NumClasses: 4, ClassNames: []string{"0", "1", "2", "3"}}
	tests := []struct {
		d             *Dataset
		spec, want    string
		notSuggesting string
	}{
		{small, "random:2:1", `class "rare" has only 2 labelled nodes, fewer than the 3 it asks for`, "random:"},
		{small, "frac:0.2:0.2", `class "rare" has only 2 labelled nodes, and a training fraction of 0.2 gives it none (it needs 3)`, "frac:0.6"},
		{small, "public", "ships no fixed split, so there is no split \"public\"; use auto", "public"},
		{empty, "auto", `split auto (frac:0.6:0.2, as empty-class ships no split): dataset empty-class: class "ghost" has no labelled nodes`, "use auto"},
		{empty, "random:1:1", `class "ghost" has only 0 labelled nodes`, "random:"},
		// Integer labels from 1 (or with a gap) leave a class empty: say so.
		{numbered, "frac:0.5:0.2", `class "3" has no labelled nodes, so no split can train it (a split needs training nodes in every class); integer labels are class numbers 0..3`, "frac:"},
	}
	for _, tt := range tests {
		t.Run(tt.d.Name+"/"+tt.spec, func(t *testing.T) {
			_, err := tt.d.Split(tt.spec, 1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if _, advice, _ := strings.Cut(err.Error(), tt.want); strings.Contains(advice, tt.notSuggesting) {
				t.Errorf("err = %v: suggests %q again", err, tt.notSuggesting)
			}
		})
	}
	if s, err := small.Split("auto", 1); err != nil || s.Name != AutoStratified {
		t.Errorf("auto on a 2-node class: split %q, error %v; want %s", s.Name, err, AutoStratified)
	}
}
