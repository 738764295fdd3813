package graph

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// randomGraphs returns directed random graphs of assorted sizes and densities,
// with self loops, including empty and edgeless ones and one large enough to
// run in parallel chunks.
func randomGraphs(t testing.TB) []*Graph {
	rng := rand.New(rand.NewPCG(7, 8))
	graphs := []*Graph{
		mustBuild(t, 0, nil, nil, BuildOptions{}),
		mustBuild(t, 5, nil, nil, BuildOptions{}),
	}
	for _, size := range [][2]int{{1, 1}, {3, 5}, {10, 40}, {50, 20}, {100, 1000}, {20000, 200000}} {
		src, dst := randomEdges(rng, size[0], size[1])
		graphs = append(graphs, mustBuild(t, size[0], src, dst, BuildOptions{SelfLoops: KeepSelfLoops}))
	}
	return graphs
}

// edgeSet lists g's edges as a set.
func edgeSet(g *Graph) map[[2]int32]bool {
	set := map[[2]int32]bool{}
	for v := 0; v < g.N; v++ {
		for _, u := range g.Adj(v) {
			set[[2]int32{int32(v), u}] = true
		}
	}
	return set
}

func TestTransposeProperties(t *testing.T) {
	for _, g := range randomGraphs(t) {
		tr := g.Transpose()
		if err := checkGraph(tr); err != nil {
			t.Fatalf("N=%d: transpose invalid: %v", g.N, err)
		}
		if tr.NumEdges() != g.NumEdges() {
			t.Fatalf("N=%d: transpose has %d edges, want %d", g.N, tr.NumEdges(), g.NumEdges())
		}
		if !sameGraph(tr.Transpose(), g) {
			t.Fatalf("N=%d: transposing twice changed the graph", g.N)
		}
		if !slices.Equal(tr.OutDegrees(), g.InDegrees()) || !slices.Equal(tr.InDegrees(), g.OutDegrees()) {
			t.Fatalf("N=%d: transpose does not swap in- and out-degrees", g.N)
		}
		if g.N <= 100 {
			for e := range edgeSet(g) {
				if !tr.HasEdge(e[1], e[0]) {
					t.Fatalf("N=%d: edge %v missing reversed in the transpose", g.N, e)
				}
			}
		}
	}
}

func TestDegreesSumToEdges(t *testing.T) {
	for _, g := range randomGraphs(t) {
		var in, out int64
		for v, d := range g.OutDegrees() {
			if int(d) != g.Degree(v) {
				t.Fatalf("N=%d: out-degree of %d is %d, row has %d", g.N, v, d, g.Degree(v))
			}
			out += int64(d)
		}
		for _, d := range g.InDegrees() {
			in += int64(d)
		}
		if in != g.NumEdges() || out != g.NumEdges() {
			t.Fatalf("N=%d: degrees sum to in %d, out %d; want %d", g.N, in, out, g.NumEdges())
		}
	}
}

func TestSymmetrizeProperties(t *testing.T) {
	for _, g := range randomGraphs(t) {
		s := g.Symmetrize()
		if err := checkGraph(s); err != nil {
			t.Fatalf("N=%d: symmetrized graph invalid: %v", g.N, err)
		}
		if !s.IsSymmetric() {
			t.Fatalf("N=%d: Symmetrize result is not symmetric", g.N)
		}
		if !sameGraph(s.Symmetrize(), s) {
			t.Fatalf("N=%d: Symmetrize is not idempotent", g.N)
		}
		if g.N <= 100 {
			want := edgeSet(g)
			for e := range edgeSet(g) {
				want[[2]int32{e[1], e[0]}] = true
			}
			if got := edgeSet(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("N=%d: Symmetrize is not the union of g and its transpose", g.N)
			}
		}
		if g.NumEdges() > 2 && g.IsSymmetric() {
			t.Fatalf("N=%d: random directed graph reported symmetric", g.N)
		}
	}
}

func TestIsSymmetric(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		src, dst []int32
		want     bool
	}{
		{"empty", 0, nil, nil, true},
		{"self loop only", 2, []int32{1}, []int32{1}, true},
		{"one direction", 2, []int32{0}, []int32{1}, false},
		{"both directions", 2, []int32{0, 1}, []int32{1, 0}, true},
		{"triangle one way", 3, []int32{0, 1, 2}, []int32{1, 2, 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustBuild(t, tt.n, tt.src, tt.dst, BuildOptions{SelfLoops: KeepSelfLoops})
			if got := g.IsSymmetric(); got != tt.want {
				t.Errorf("IsSymmetric = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSelfLoops(t *testing.T) {
	for _, g := range randomGraphs(t) {
		with, without := g.WithSelfLoops(), g.WithoutSelfLoops()
		for name, h := range map[string]*Graph{"with": with, "without": without} {
			if err := checkGraph(h); err != nil {
				t.Fatalf("N=%d: %s self loops invalid: %v", g.N, name, err)
			}
		}
		for v := 0; v < g.N; v++ {
			if !with.HasEdge(int32(v), int32(v)) || without.HasEdge(int32(v), int32(v)) {
				t.Fatalf("N=%d: self loop of %d wrong: with %v, without %v", g.N, v,
					with.HasEdge(int32(v), int32(v)), without.HasEdge(int32(v), int32(v)))
			}
		}
		if with.NumEdges() != without.NumEdges()+int64(g.N) {
			t.Fatalf("N=%d: %d edges with loops, %d without", g.N, with.NumEdges(), without.NumEdges())
		}
		if !sameGraph(with.WithoutSelfLoops(), without) || !sameGraph(without.WithSelfLoops(), with) {
			t.Fatalf("N=%d: adding and removing self loops do not round-trip", g.N)
		}
		if g.N <= 100 {
			want := edgeSet(g)
			for v := 0; v < g.N; v++ {
				delete(want, [2]int32{int32(v), int32(v)})
			}
			if !reflect.DeepEqual(edgeSet(without), want) {
				t.Fatalf("N=%d: WithoutSelfLoops removed more than the loops", g.N)
			}
		}
	}
}

func TestInducedSubgraph(t *testing.T) {
	// 0→1, 1→2, 2→0, 2→3, 3→3
	g := mustBuild(t, 4, []int32{0, 1, 2, 2, 3}, []int32{1, 2, 0, 3, 3}, BuildOptions{SelfLoops: KeepSelfLoops})
	tests := []struct {
		name      string
		nodes     []int32
		offsets   []int64
		neighbors []int32
		oldToNew  []int32
	}{
		{"none", []int32{}, []int64{0}, []int32{}, []int32{-1, -1, -1, -1}},
		{"all", []int32{0, 1, 2, 3}, g.Offsets, g.Neighbors, []int32{0, 1, 2, 3}},
		{"sorted subset", []int32{0, 2, 3}, []int64{0, 0, 2, 3}, []int32{0, 2, 2}, []int32{0, -1, 1, 2}},
		{"reordered", []int32{3, 2, 0}, []int64{0, 1, 3, 3}, []int32{0, 0, 2}, []int32{2, -1, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, newToOld, oldToNew, err := g.InducedSubgraph(tt.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkGraph(sub); err != nil {
				t.Fatal(err)
			}
			if sub.N != len(tt.nodes) || !slices.Equal(sub.Offsets, tt.offsets) || !slices.Equal(sub.Neighbors, tt.neighbors) {
				t.Errorf("got offsets %v neighbours %v, want %v %v", sub.Offsets, sub.Neighbors, tt.offsets, tt.neighbors)
			}
			if !slices.Equal(newToOld, tt.nodes) || !slices.Equal(oldToNew, tt.oldToNew) {
				t.Errorf("got maps %v %v, want %v %v", newToOld, oldToNew, tt.nodes, tt.oldToNew)
			}
		})
	}
}

func TestInducedSubgraphMatchesFilteredEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, g := range randomGraphs(t)[2:7] {
		nodes := rng.Perm(g.N)[:rng.IntN(g.N+1)]
		nodes32 := make([]int32, len(nodes))
		for i, v := range nodes {
			nodes32[i] = int32(v)
		}
		sub, newToOld, oldToNew, err := g.InducedSubgraph(nodes32)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkGraph(sub); err != nil {
			t.Fatal(err)
		}
		want := map[[2]int32]bool{}
		for e := range edgeSet(g) {
			if oldToNew[e[0]] >= 0 && oldToNew[e[1]] >= 0 {
				want[[2]int32{oldToNew[e[0]], oldToNew[e[1]]}] = true
			}
		}
		if !reflect.DeepEqual(edgeSet(sub), want) {
			t.Fatalf("N=%d, %d nodes: wrong edges", g.N, len(nodes))
		}
		for i, v := range newToOld {
			if oldToNew[v] != int32(i) {
				t.Fatalf("maps are not inverse at %d", i)
			}
		}
	}
}

func TestInducedSubgraphErrors(t *testing.T) {
	g := mustBuild(t, 3, nil, nil, BuildOptions{})
	tests := []struct {
		nodes []int32
		want  string
	}{
		{[]int32{0, 3}, "node 1 is 3"},
		{[]int32{-1}, "node 0 is -1"},
		{[]int32{2, 0, 2}, "nodes 0 and 2 are both 2"},
	}
	for _, tt := range tests {
		if _, _, _, err := g.InducedSubgraph(tt.nodes); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("InducedSubgraph(%v) error %v, want one containing %q", tt.nodes, err, tt.want)
		}
	}
}

func TestPermute(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, g := range randomGraphs(t) {
		perm := make([]int32, g.N)
		for i, v := range rng.Perm(g.N) {
			perm[i] = int32(v)
		}
		p, err := g.Permute(perm)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkGraph(p); err != nil {
			t.Fatal(err)
		}
		inverse, _ := invertPermutation(perm, g.N)
		back, err := p.Permute(inverse)
		if err != nil {
			t.Fatal(err)
		}
		if !sameGraph(back, g) {
			t.Fatalf("N=%d: permuting by perm and its inverse changed the graph", g.N)
		}
		if g.N <= 100 {
			for e := range edgeSet(g) {
				if !p.HasEdge(perm[e[0]], perm[e[1]]) {
					t.Fatalf("N=%d: edge %v not renamed", g.N, e)
				}
			}
		}
	}
}

func TestPermuteErrors(t *testing.T) {
	g := mustBuild(t, 3, nil, nil, BuildOptions{})
	tests := []struct {
		perm []int32
		want string
	}{
		{[]int32{0, 1}, "2 entries for 3 nodes"},
		{[]int32{0, 1, 3}, "maps 2 to 3"},
		{[]int32{1, 1, 0}, "both 0 and 1 to 1"},
	}
	for _, tt := range tests {
		if _, err := g.Permute(tt.perm); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Permute(%v) error %v, want one containing %q", tt.perm, err, tt.want)
		}
	}
}

// rowSums returns the sum of each row's values.
func rowSums(a *tensor.CSR) []float64 {
	sums := make([]float64, a.Rows)
	for r := range sums {
		for p := a.Offsets[r]; p < a.Offsets[r+1]; p++ {
			sums[r] += float64(a.Value(p))
		}
	}
	return sums
}

func TestMeanNorm(t *testing.T) {
	for _, g := range randomGraphs(t) {
		a := g.MeanNorm()
		if err := a.Validate(); err != nil {
			t.Fatal(err)
		}
		for r, sum := range rowSums(a) {
			want := 1.0
			if g.Degree(r) == 0 {
				want = 0
			}
			if math.Abs(sum-want) > 1e-5 {
				t.Fatalf("N=%d: row %d sums to %g, want %g", g.N, r, sum, want)
			}
		}
	}
}

func TestGCNNorm(t *testing.T) {
	for _, g := range randomGraphs(t) {
		s := g.Symmetrize()
		a := s.GCNNorm()
		if err := a.Validate(); err != nil {
			t.Fatal(err)
		}
		deg := s.WithSelfLoops().OutDegrees()
		// Â is symmetric for an undirected graph, and Â·sqrt(d) = sqrt(d):
		// sqrt(d) is the eigenvector of eigenvalue 1.
		for r := 0; r < a.Rows; r++ {
			var dot float64
			for p := a.Offsets[r]; p < a.Offsets[r+1]; p++ {
				c := a.Indices[p]
				want := 1 / math.Sqrt(float64(deg[r])*float64(deg[c]))
				if math.Abs(float64(a.Values[p])-want) > 1e-6 {
					t.Fatalf("N=%d: entry (%d, %d) = %g, want %g", g.N, r, c, a.Values[p], want)
				}
				dot += float64(a.Values[p]) * math.Sqrt(float64(deg[c]))
			}
			if math.Abs(dot-math.Sqrt(float64(deg[r]))) > 1e-4*math.Sqrt(float64(deg[r])) {
				t.Fatalf("N=%d: (Â sqrt(d))[%d] = %g, want %g", g.N, r, dot, math.Sqrt(float64(deg[r])))
			}
		}
		if a.NNZ() != int(s.WithoutSelfLoops().NumEdges())+g.N {
			t.Fatalf("N=%d: Â has %d entries, want edges plus one loop per node", g.N, a.NNZ())
		}
	}
}

// A partition's block: rows are owned nodes, columns owned plus halo nodes,
// with degrees taken from the whole graph.
func TestNormWithDegreesRectangular(t *testing.T) {
	adj := &tensor.CSR{Rows: 2, Cols: 3, Offsets: []int64{0, 2, 3}, Indices: []int32{0, 2, 1}}
	rowDeg := []int32{4, 1}
	colDeg := []int32{4, 1, 9}
	gcn, err := GCNNormWithDegrees(adj, rowDeg, colDeg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1.0 / 4, 1.0 / 6, 1}; !slices.Equal(gcn.Values, want) {
		t.Errorf("GCN values %v, want %v", gcn.Values, want)
	}
	mean, err := MeanNormWithDegrees(adj, rowDeg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{0.25, 0.25, 1}; !slices.Equal(mean.Values, want) {
		t.Errorf("mean values %v, want %v", mean.Values, want)
	}
	if &gcn.Indices[0] != &adj.Indices[0] || &mean.Offsets[0] != &adj.Offsets[0] {
		t.Error("normalised matrices should share adj's structure")
	}
}

func TestNormWithDegreesErrors(t *testing.T) {
	adj := &tensor.CSR{Rows: 2, Cols: 3, Offsets: []int64{0, 2, 2}, Indices: []int32{0, 2}}
	tests := []struct {
		name           string
		adj            *tensor.CSR
		rowDeg, colDeg []int32
		want           string
	}{
		{"nil adjacency", nil, nil, nil, "nil adjacency"},
		{"invalid adjacency", &tensor.CSR{Rows: 1, Cols: 1, Offsets: []int64{0, 1}, Indices: []int32{5}}, []int32{1}, []int32{1}, "column id 5"},
		{"short row degrees", adj, []int32{1}, []int32{1, 1, 1}, "1 row degrees for 2 rows"},
		{"short column degrees", adj, []int32{1, 1}, []int32{1, 1}, "2 column degrees for 3 columns"},
		{"zero row degree", adj, []int32{0, 1}, []int32{1, 1, 1}, "row 0 has entries but degree 0"},
		{"zero column degree", adj, []int32{2, 0}, []int32{1, 1, 0}, "column 2, whose degree is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := GCNNormWithDegrees(tt.adj, tt.rowDeg, tt.colDeg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("GCN: error %v, want one containing %q", err, tt.want)
			}
		})
	}
	// The mean only looks at rows; an empty row may have degree 0.
	if _, err := MeanNormWithDegrees(adj, []int32{2, 0}); err != nil {
		t.Errorf("mean with an empty zero-degree row: %v", err)
	}
	if _, err := MeanNormWithDegrees(adj, []int32{0, 0}); err == nil || !strings.Contains(err.Error(), "row 0 has entries") {
		t.Errorf("mean with zero degree: error %v", err)
	}
}
