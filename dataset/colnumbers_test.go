package dataset

import (
	"reflect"
	"strings"
	"testing"
)

// A first line of column numbers, as pandas writes a frame of integer
// columns (to_csv(index=False)), is a header when the rows after it cover
// the nodes, and the first row when they do so with it; any other count is
// an error that says how the line was read.
func TestFeaturesColumnNumbers(t *testing.T) {
	// Nodes in order: alice, bob, carol, dave.
	for _, tc := range []struct {
		name, content string
		want          []float32
	}{
		{"0-based header", "0,1\n1,2\n3,4\n5,6\n7,8\n", []float32{1, 2, 3, 4, 5, 6, 7, 8}},
		{"1-based header", "1\t2\n1\t2\n3\t4\n5\t6\n7\t8\n", []float32{1, 2, 3, 4, 5, 6, 7, 8}},
		{"one column", "0\n1\n2\n3\n4\n", []float32{1, 2, 3, 4}},
		{"a first row", "0,1\n3,4\n5,6\n7,8\n", []float32{0, 1, 3, 4, 5, 6, 7, 8}},
		{"sparse, header", "0,1,2,3\n1,0,0,0\n0,0,2,0\n0,0,0,0\n0,3,0,0\n", []float32{1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 3, 0, 0}},
		{"sparse, a first row", "0,1,2,3\n0,0,2,0\n0,0,0,0\n0,3,0,0\n", []float32{0, 1, 2, 3, 0, 0, 2, 0, 0, 0, 0, 0, 0, 3, 0, 0}},
		{"keyed rows, header", "0,1,2\ndave,7,8\nalice,1,2\nbob,3,4\ncarol,5,6\n", []float32{1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := stringGraph(t)
			if err := d.ReadFeatures(writeFile(t, dir, "x.csv", []byte(tc.content))); err != nil {
				t.Fatal(err)
			}
			if got := d.DenseFeatures().Data; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("features %v, want %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, content, wantErr string }{
		{"too few rows", "0,1\n1,2\n3,4\n", `that counts line 1, "0,1", which may be a header numbering the columns (without it, 2 rows; to mark a header, name the columns with words (f0,f1,...), or start the line with "#")`},
		{"too few rows, the count", "0,1\n1,2\n3,4\n", `x.csv: 3 feature rows for 4 nodes`},
		{"too many rows", "0,1\n1,2\n3,4\n5,6\n7,8\n9,9\n", `x.csv: line 6: more feature rows than the graph's 4 nodes, even without line 1, "0,1", which may be a header numbering the columns`},
		{"rows with an index", "0,1\n0,1,2\n1,3,4\n2,5,6\n3,7,8\n", `x.csv: line 2: 3 columns, one more than line 1, "0,1", numbers: if each row starts with its node's id, head that column "id"`},
		{"ragged", "0,1,2\n0,1\n", `x.csv: line 2: 2 columns, but the first row has 3 (line 1, "0,1,2")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := stringGraph(t)
			err := d.ReadFeatures(writeFile(t, dir, "x.csv", []byte(tc.content)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	// Keyed rows on a graph with a node "0": the line is node 0's row
	// unless the node has another.
	dir := t.TempDir()
	d, err := LoadPath(writeFile(t, dir, "g.txt", []byte("0 x\nx y\n")))
	if err != nil || d.NodeIDs == nil {
		t.Fatalf("err %v, ids %v; want string ids", err, d.NodeIDs)
	}
	if err := d.ReadFeatures(writeFile(t, dir, "x.csv", []byte("0,1,2\ny,5,6\nx,3,4\n"))); err != nil {
		t.Fatal(err)
	}
	if got, want := d.DenseFeatures().Data, []float32{1, 2, 3, 4, 5, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("features %v, want %v", got, want)
	}
}

// A labels file's first line of column numbers ("0,1") is a header when
// the node it names is labelled again or the other labels are class
// names, or it names no node; else it is that node's label, and an error
// after it says so.
func TestLabelsColumnNumbers(t *testing.T) {
	dir := t.TempDir()
	ints, err := LoadPath(writeFile(t, dir, "g.txt", []byte("0 1\n1 2\n2 3\n")))
	if err != nil {
		t.Fatal(err)
	}
	strs, _ := stringGraph(t) // alice, bob, carol, dave
	for _, tc := range []struct {
		name    string
		d       *Dataset
		content string
		want    []int32
		names   []string
	}{
		{"the node again", ints, "0,1\n0,2\n1,0\n2,1\n3,0\n", []int32{2, 0, 1, 0}, nil},
		{"1-based, the node again", ints, "1,2\n3,0\n1,1\n", []int32{-1, 1, -1, 0}, nil},
		{"class names", ints, "0,1\n1,cat\n2,dog\n", []int32{-1, 0, 1, -1}, []string{"cat", "dog"}},
		{"a label", ints, "0,1\n1,0\n2,1\n", []int32{1, 0, 1, -1}, nil},
		{"no node", strs, "0,1\nalice,x\ncarol,y\n", []int32{0, -1, 1, -1}, []string{"x", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.d.ReadLabels(writeFile(t, dir, "y.csv", []byte(tc.content))); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.d.Labels, tc.want) || tc.names != nil && !reflect.DeepEqual(tc.d.ClassNames, tc.names) {
				t.Errorf("labels %v (classes %q), want %v (%q)", tc.d.Labels, tc.d.ClassNames, tc.want, tc.names)
			}
		})
	}
	err = ints.ReadLabels(writeFile(t, dir, "y.csv", []byte("0,1\n1,0\n7,1\n")))
	want := `y.csv: line 3: node id "7" is not a node of the graph (4 nodes); the nodes are the ids of ` // …
	note := `(line 1, "0,1", was read as node 0's label; if it is a header, name the columns: "id,label")`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), note) {
		t.Errorf("err = %v, want %q…%q", err, want, note)
	}
}

// A split file's first line of column numbers is a header: no set is a
// number.
func TestSplitColumnNumbers(t *testing.T) {
	d, dir := stringGraph(t)
	if err := d.ReadLabels(writeFile(t, dir, "y.csv", []byte("alice,x\nbob,y\ncarol,x\ndave,y\n"))); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, dir, "split.csv", []byte("0,1\ndave,train\nalice,train\nbob,val\ncarol,test\n"))
	s, err := d.Split("file:"+p, 0)
	want := Split{Name: "file:" + p, Train: []int32{0, 3}, Val: []int32{1}, Test: []int32{2}}
	if err != nil || !reflect.DeepEqual(s, want) {
		t.Fatalf("split %+v, %v; want %+v", s, err, want)
	}
}
