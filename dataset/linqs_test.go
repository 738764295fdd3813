package dataset

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/datatest"
)

const (
	tinyContent = "p1\t1\t0\t1\tB\np2\t0\t1\t0\tA\np3\t0\t0\t0\tB\n"
	// p9 has no content row; p3 cites itself.
	tinyCites = "p1\tp2\np2\tp1\np3\tp3\np9\tp1\n"
	// planetoid_index, paper_id, label, split; Planetoid order differs.
	tinySplit = "# planetoid_index\tpaper_id\tlabel\tsplit\n0\tp3\tB\ttrain\n1\tp2\tA\ttrain\n2\tp1\tB\ttest\n3\tp9\t-\t-\n"
)

func TestParseLINQS(t *testing.T) {
	d, nodes, err := parseLINQS("tiny", "t.content", strings.NewReader(tinyContent), "t.cites", bytes.NewReader(gz(tinyCites)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(nodes.ids, []string{"p1", "p2", "p3", "p9"}) {
		t.Errorf("node ids %v", nodes.ids)
	}
	// Classes are sorted by name: A=0, B=1; p9 is unlabelled.
	if !reflect.DeepEqual(d.Labels, []int32{1, 0, 1, Unlabelled}) || !reflect.DeepEqual(d.ClassNames, []string{"A", "B"}) {
		t.Errorf("labels %v, classes %v", d.Labels, d.ClassNames)
	}
	if d.NumUndirectedEdges() != 2 { // p1–p2 (twice) and p9–p1; the self loop is dropped
		t.Errorf("%d undirected edges, want 2", d.NumUndirectedEdges())
	}
	if d.Sparse == nil || d.Sparse.Values != nil || d.Sparse.NNZ() != 3 || d.Sparse.Rows != 4 {
		t.Errorf("features %+v, want 4 rows, 3 ones in the all-ones form", d.Sparse)
	}
	if err := applyPlanetoidSplit(d, nodes, "t.tsv", strings.NewReader(tinySplit)); err != nil {
		t.Fatal(err)
	}
	want := Split{Name: "public", Train: []int32{1, 2}, Test: []int32{0}}
	if !reflect.DeepEqual(d.Splits[0], want) {
		t.Errorf("split %+v, want %+v", d.Splits[0], want)
	}
	if !reflect.DeepEqual(d.MaskOrder, []int32{2, 1, 0, 3}) {
		t.Errorf("mask order %v", d.MaskOrder)
	}
}

func TestParseLINQSErrors(t *testing.T) {
	tests := []struct {
		name, content, cites, wantErr string
	}{
		{"ragged", "p1\t1\t0\tA\np2\t1\tA\n", "", "t.content: line 2: 3 columns, but line 1 has 4"},
		{"duplicate id", "p1\t1\tA\np1\t0\tB\n", "", `t.content: line 2: paper id "p1" appears twice`},
		{"NaN", "p1\t1\tA\np2\tNaN\tB\n", "", "t.content: line 2: feature 1 is NaN"},
		{"bad number", "p1\tx\tA\n", "", `t.content: line 1: feature 1: "x" is not a number`},
		{"missing label", "p1\t1\t\n", "", "t.content: line 1: paper \"p1\" has an empty class label"},
		{"one column", "p1\n", "", "found 1 column"},
		{"empty", "", "", "t.content: no papers"},
		{"cites columns", "p1\t1\tA\n", "p1\tp2\tp3\n", "t.cites: line 1: want \"<cited id> <citing id>\", found 3 columns"},
		{"truncated gzip cites", "p1\t1\tA\n", string(gz(strings.Repeat("p1\tp1\n", 500))[:60]), "t.cites: after line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseLINQS("x", "t.content", strings.NewReader(tc.content), "t.cites", strings.NewReader(tc.cites))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestPlanetoidSplitErrors(t *testing.T) {
	tests := []struct{ name, tsv, wantErr string }{
		{"unknown paper", "0\tzz\tB\ttrain\n", `t.tsv: line 1: paper id "zz" is not in the dataset`},
		{"wrong label", "0\tp1\tA\ttrain\n", `t.tsv: line 1: paper "p1" has label "A" here but "B"`},
		{"index range", "7\tp1\tB\ttrain\n", "planetoid index \"7\" is not in [0, 4)"},
		{"columns", "0\tp1\tB\n", "want 4 tab-separated columns"},
		{"bad split", "0\tp1\tB\tdev\n", `split "dev"`},
		{"unlabelled in train", "0\tp9\t-\ttrain\n", "train node 3 has no label"},
		{"index twice", "0\tp1\tB\ttrain\n0\tp2\tA\ttrain\n", "planetoid index 0 appears twice"},
		{"paper twice", "0\tp1\tB\ttrain\n1\tp1\tB\ttest\n", `line 2: paper id "p1" appears twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, nodes, err := parseLINQS("tiny", "t.content", strings.NewReader(tinyContent), "t.cites", strings.NewReader(tinyCites))
			if err != nil {
				t.Fatal(err)
			}
			err = applyPlanetoidSplit(d, nodes, "t.tsv", strings.NewReader(tc.tsv))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadLINQSPath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tiny.content.gz", gz(tinyContent))
	writeFile(t, dir, "tiny.cites", []byte(tinyCites))
	writeFile(t, dir, "tiny.public_split.tsv", []byte(tinySplit))
	for _, p := range []string{dir, dir + "/tiny.content.gz"} {
		d, err := Load(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != "tiny" || d.NumNodes() != 4 || len(d.Splits) != 1 {
			t.Errorf("%s: name %q, %d nodes, %d splits", p, d.Name, d.NumNodes(), len(d.Splits))
		}
	}
}

// TestEmbeddedCoraEqualsDataDir checks that the copy in the binary is the
// dataset the staged files give (ignoring the Geom-GCN splits, which only
// the data directory has).
func TestEmbeddedCoraEqualsDataDir(t *testing.T) {
	dir := datatest.Dir(t)
	embedded, err := EmbeddedCora()
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := Load("cora", dir)
	if err != nil {
		t.Fatal(err)
	}
	onDisk.Splits = onDisk.Splits[:1]
	if !reflect.DeepEqual(embedded, onDisk) {
		t.Error("embedded Cora differs from the data directory's")
	}
}

func TestLoadCoraWithoutDataDir(t *testing.T) {
	t.Setenv(DataDirEnv, "")
	d, err := Load("cora", "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Split("public", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes() != 2708 || d.NumUndirectedEdges() != 5278 || d.NumFeatures() != 1433 || d.NumClasses != 7 ||
		len(s.Train) != 140 || len(s.Val) != 500 || len(s.Test) != 1000 || d.FeatureNonzeros() != 49216 {
		t.Errorf("embedded cora: %d nodes, %d edges, %d features, %d classes, split %d/%d/%d",
			d.NumNodes(), d.NumUndirectedEdges(), d.NumFeatures(), d.NumClasses, len(s.Train), len(s.Val), len(s.Test))
	}
	// Planetoid's training set has 20 nodes of every class.
	perClass := make([]int, d.NumClasses)
	for _, v := range s.Train {
		perClass[d.Labels[v]]++
	}
	for c, k := range perClass {
		if k != 20 {
			t.Errorf("class %s has %d training nodes, want 20", d.ClassNames[c], k)
		}
	}
}

func FuzzLINQS(f *testing.F) {
	f.Add([]byte(tinyContent), []byte(tinyCites), []byte(tinySplit))
	f.Add(gz(tinyContent), gz(tinyCites), []byte("0\tp1\tB\ttrain\n"))
	f.Add([]byte("a\t0.5\tX\n"), []byte("a b\n"), []byte(""))
	f.Fuzz(func(t *testing.T, content, cites, split []byte) {
		d, nodes, err := parseLINQS("fuzz", "c", bytes.NewReader(content), "e", bytes.NewReader(cites))
		if err != nil {
			return
		}
		if err := applyPlanetoidSplit(d, nodes, "s", bytes.NewReader(split)); err != nil {
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("invalid dataset after split: %v", err)
		}
	})
}
