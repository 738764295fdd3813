package dataset

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/graft-gnn/graft/internal/datatest"
)

// staged holds the counts the data directory's README.md verifies for each
// registry entry. Edges are undirected, after symmetrising without self loops.
var staged = []struct {
	name              string
	nodes             int
	edges             int64
	features, classes int
	sparse            bool
	train, val, test  int
	classCounts       map[string]int
	labelled          int
	splits            int
	featureNonzeros   int64 // 0: not checked
}{
	{name: "cora", nodes: 2708, edges: 5278, features: 1433, classes: 7, sparse: true, train: 140, val: 500, test: 1000, labelled: 2708, splits: 11, featureNonzeros: 49216,
		classCounts: map[string]int{"Case_Based": 298, "Genetic_Algorithms": 418, "Neural_Networks": 818, "Probabilistic_Methods": 426, "Reinforcement_Learning": 217, "Rule_Learning": 180, "Theory": 351}},
	{name: "citeseer", nodes: 3327, edges: 4552, features: 3703, classes: 6, sparse: true, train: 120, val: 500, test: 1000, labelled: 3312, splits: 11, featureNonzeros: 105165,
		classCounts: map[string]int{"AI": 249, "Agents": 596, "DB": 701, "HCI": 508, "IR": 668, "ML": 590}},
	{name: "amazon-computers", nodes: 13752, edges: 491722 / 2, features: 767, classes: 10, sparse: true, labelled: 13752},
	{name: "amazon-photo", nodes: 7650, edges: 238162 / 2, features: 745, classes: 8, sparse: true, labelled: 7650},
	{name: "coauthor-cs", nodes: 18333, edges: 163788 / 2, features: 6805, classes: 15, sparse: true, labelled: 18333},
	{name: "tolokers", nodes: 11758, edges: 519000, features: 10, classes: 2, train: 5879, val: 2939, test: 2940, labelled: 11758, splits: 10,
		classCounts: map[string]int{"0": 9192, "1": 2566}},
	{name: "cnr-2000", nodes: 325557, edges: 2738969},
}

func TestRegistryLoadsStagedCounts(t *testing.T) {
	dir := datatest.Dir(t)
	for _, want := range staged {
		t.Run(want.name, func(t *testing.T) {
			start := time.Now()
			d, err := Load(want.name, dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s loaded in %v", want.name, time.Since(start).Round(time.Millisecond))
			if got := d.NumNodes(); got != want.nodes {
				t.Errorf("nodes = %d, want %d", got, want.nodes)
			}
			if got := d.NumUndirectedEdges(); got != want.edges {
				t.Errorf("undirected edges = %d, want %d", got, want.edges)
			}
			if got := d.Graph.NumEdges(); got != 2*want.edges {
				t.Errorf("stored entries = %d, want %d", got, 2*want.edges)
			}
			if got := d.NumFeatures(); got != want.features {
				t.Errorf("features = %d, want %d", got, want.features)
			}
			if got := d.Sparse != nil; want.features > 0 && got != want.sparse {
				t.Errorf("sparse features = %v, want %v", got, want.sparse)
			}
			if d.NumClasses != want.classes {
				t.Errorf("classes = %d, want %d", d.NumClasses, want.classes)
			}
			if want.featureNonzeros != 0 && d.FeatureNonzeros() != want.featureNonzeros {
				t.Errorf("feature nonzeros = %d, want %d", d.FeatureNonzeros(), want.featureNonzeros)
			}
			labelled := 0
			for _, c := range d.ClassCounts() {
				labelled += c
			}
			if labelled != want.labelled {
				t.Errorf("labelled nodes = %d, want %d", labelled, want.labelled)
			}
			if want.classCounts != nil {
				got := map[string]int{}
				for c, k := range d.ClassCounts() {
					got[d.ClassNames[c]] = k
				}
				if !reflect.DeepEqual(got, want.classCounts) {
					t.Errorf("class counts = %v, want %v", got, want.classCounts)
				}
			}
			if len(d.Splits) != want.splits {
				t.Errorf("%d fixed splits, want %d", len(d.Splits), want.splits)
			}
			if want.train == 0 {
				return
			}
			s, err := d.Split("public", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Train) != want.train || len(s.Val) != want.val || len(s.Test) != want.test {
				t.Errorf("public split = %d/%d/%d, want %d/%d/%d", len(s.Train), len(s.Val), len(s.Test), want.train, want.val, want.test)
			}
		})
	}
}

// DataDirProblem says what is wrong once, in words: a path through a file
// or one that cannot be examined does not repeat itself after "stat".
func TestDataDirProblem(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"", ""},
		{dir, ""},
		{filepath.Join(dir, "none"), "does not exist"},
		{file, "is not a directory"},
		{filepath.Join(file, "sub"), "cannot be read: not a directory"},
	} {
		if got := DataDirProblem(tc.dir); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.dir, got, tc.want)
		}
	}
}
