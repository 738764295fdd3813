package dataset

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// lccFixture is a 7-node graph with components {0,2,4,5} (a path 0-2-4-5),
// {1,3} and {6}, three classes of which class 1 lives only outside the
// largest component, sparse features equal to 10·node+1 in column node%3,
// and one fixed split touching every component.
func lccFixture(t *testing.T) *Dataset {
	t.Helper()
	g, err := undirected(7, []int32{0, 2, 4, 1}, []int32{2, 4, 5, 3})
	if err != nil {
		t.Fatal(err)
	}
	x := &tensor.CSR{Rows: 7, Cols: 3, Offsets: make([]int64, 8)}
	for v := range 7 {
		x.Offsets[v+1] = int64(v + 1)
		x.Indices = append(x.Indices, int32(v%3))
		x.Values = append(x.Values, float32(10*v+1))
	}
	d := &Dataset{Name: "lcc", Graph: g, Sparse: x,
		Labels:     []int32{0, 1, 2, Unlabelled, 0, 2, 1},
		NumClasses: 3, ClassNames: []string{"a", "b", "c"},
		Splits:    []Split{{Name: "public", Train: []int32{0, 1}, Val: []int32{2, 6}, Test: []int32{4, 5}}},
		MaskOrder: []int32{6, 5, 4, 3, 2, 1, 0}}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestComponents(t *testing.T) {
	comp, sizes := lccFixture(t).Components()
	if want := []int32{0, 1, 0, 1, 0, 0, 2}; !slices.Equal(comp, want) {
		t.Errorf("components %v, want %v", comp, want)
	}
	if want := []int{4, 2, 1}; !slices.Equal(sizes, want) {
		t.Errorf("sizes %v, want %v", sizes, want)
	}
}

func TestLargestComponent(t *testing.T) {
	d := lccFixture(t)
	l, err := d.LargestComponent()
	if err != nil {
		t.Fatal(err)
	}
	kept := []int32{0, 2, 4, 5} // old ids of new nodes 0..3
	if l.NumNodes() != 4 || l.NumUndirectedEdges() != 3 {
		t.Fatalf("%d nodes, %d edges; want 4 and 3", l.NumNodes(), l.NumUndirectedEdges())
	}
	for v := range 4 {
		var want []int32
		if v > 0 {
			want = append(want, int32(v-1))
		}
		if v < 3 {
			want = append(want, int32(v+1))
		}
		if got := l.Graph.Adj(v); !slices.Equal(got, want) {
			t.Errorf("node %d: neighbours %v, want %v", v, got, want)
		}
	}
	dense, old := l.DenseFeatures(), d.DenseFeatures()
	for i, v := range kept {
		if !slices.Equal(dense.Row(i), old.Row(int(v))) {
			t.Errorf("node %d (was %d): features %v, want %v", i, v, dense.Row(i), old.Row(int(v)))
		}
	}
	// Class "b" has nodes only outside the component: dropped, "c" becomes 1.
	if l.NumClasses != 2 || !slices.Equal(l.ClassNames, []string{"a", "c"}) {
		t.Errorf("classes %d %v, want 2 [a c]", l.NumClasses, l.ClassNames)
	}
	if want := []int32{0, 1, 0, 1}; !slices.Equal(l.Labels, want) {
		t.Errorf("labels %v, want %v", l.Labels, want)
	}
	s := l.Splits[0]
	if s.Name != "public" || !slices.Equal(s.Train, []int32{0}) || !slices.Equal(s.Val, []int32{1}) || !slices.Equal(s.Test, []int32{2, 3}) {
		t.Errorf("split %+v, want public train [0] val [1] test [2 3]", s)
	}
	if l.MaskOrder != nil {
		t.Errorf("mask order %v kept; it describes the original nodes", l.MaskOrder)
	}
	// The original is untouched.
	if d.NumNodes() != 7 || d.NumClasses != 3 || len(d.Splits[0].Train) != 2 {
		t.Error("LargestComponent modified its receiver")
	}
	// A random split on the component covers both remaining classes.
	if _, err := l.Split("random:1:0", 1); err != nil {
		t.Errorf("random split of the component: %v", err)
	}
}

func TestLargestComponentConnectedAndDense(t *testing.T) {
	g, err := undirected(3, []int32{0, 1}, []int32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	d := &Dataset{Name: "path", Graph: g, Dense: tensor.New(3, 2), Labels: []int32{0, 1, 0},
		NumClasses: 2, ClassNames: []string{"0", "1"}}
	l, err := d.LargestComponent()
	if err != nil || l != d {
		t.Errorf("connected graph: got %p, %v; want the dataset itself", l, err)
	}
	// Two components of equal size: the one with node 0 wins; dense rows follow.
	g, err = undirected(4, []int32{2, 0}, []int32{3, 1})
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.FromSlice(4, 1, []float32{1, 2, 3, 4})
	d = &Dataset{Name: "tie", Graph: g, Dense: x, NumClasses: 0}
	if l, err = d.LargestComponent(); err != nil {
		t.Fatal(err)
	}
	if l.NumNodes() != 2 || !slices.Equal(l.Dense.Data, []float32{1, 2}) || l.Labels != nil {
		t.Errorf("tie: %d nodes, features %v, labels %v; want nodes 0 and 1", l.NumNodes(), l.Dense.Data, l.Labels)
	}
}

// TestLargestComponentShchur checks the gnn-benchmark files against the
// largest-component sizes in Table 1 of Shchur et al. (2018).
func TestLargestComponentShchur(t *testing.T) {
	dir := os.Getenv(DataDirEnv)
	if dir == "" {
		t.Skip("set " + DataDirEnv + " to the data directory")
	}
	for _, c := range []struct {
		name         string
		nodes, edges int
	}{
		{"amazon-computers", 13381, 245778},
		{"amazon-photo", 7487, 119043},
		{"coauthor-cs", 18333, 81894},
	} {
		e, _ := lookup(c.name)
		if ok, _ := e.Found(dir); !ok {
			t.Logf("%s: not in %s", c.name, filepath.Clean(dir))
			continue
		}
		d, err := Load(c.name, dir)
		if err != nil {
			t.Fatal(err)
		}
		l, err := d.LargestComponent()
		if err != nil {
			t.Fatal(err)
		}
		if l.NumNodes() != c.nodes || l.NumUndirectedEdges() != int64(c.edges) || l.NumClasses != d.NumClasses {
			t.Errorf("%s: component has %d nodes, %d edges, %d classes; want %d, %d, %d",
				c.name, l.NumNodes(), l.NumUndirectedEdges(), l.NumClasses, c.nodes, c.edges, d.NumClasses)
		}
	}
}
