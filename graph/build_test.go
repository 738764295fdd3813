package graph

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// referenceBuild is FromEdges written the obvious way, to compare against.
func referenceBuild(n int, src, dst []int32, opt BuildOptions) *Graph {
	rows := make([]map[int32]bool, n)
	for v := range rows {
		rows[v] = map[int32]bool{}
	}
	add := func(s, d int32) {
		if s == d && opt.SelfLoops == DropSelfLoops {
			return
		}
		rows[s][d] = true
	}
	for i := range src {
		add(src[i], dst[i])
		if opt.Symmetrize {
			add(dst[i], src[i])
		}
	}
	g := &Graph{N: n, Offsets: make([]int64, n+1), Neighbors: []int32{}}
	for v, row := range rows {
		adj := make([]int32, 0, len(row))
		for u := range row {
			adj = append(adj, u)
		}
		slices.Sort(adj)
		g.Neighbors = append(g.Neighbors, adj...)
		g.Offsets[v+1] = int64(len(g.Neighbors))
	}
	return g
}

// sameGraph reports whether a and b have the same nodes and rows, ignoring
// nil versus empty slices.
func sameGraph(a, b *Graph) bool {
	if a.N != b.N || !slices.Equal(a.Offsets, b.Offsets) {
		return false
	}
	return slices.Equal(a.Neighbors, b.Neighbors)
}

func mustBuild(t testing.TB, n int, src, dst []int32, opt BuildOptions) *Graph {
	t.Helper()
	g, err := FromEdges(n, src, dst, opt)
	if err != nil {
		t.Fatalf("FromEdges: %v", err)
	}
	if err := checkGraph(g); err != nil {
		t.Fatalf("FromEdges built an invalid graph: %v", err)
	}
	return g
}

// checkGraph checks Validate plus the rows being strictly increasing.
func checkGraph(g *Graph) error {
	if err := g.Validate(); err != nil {
		return err
	}
	for v := 0; v < g.N; v++ {
		row := g.Adj(v)
		for i := 1; i < len(row); i++ {
			if row[i-1] >= row[i] {
				return fmt.Errorf("row %d not strictly increasing: %v", v, row)
			}
		}
	}
	return nil
}

func TestFromEdges(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		src, dst  []int32
		opt       BuildOptions
		offsets   []int64
		neighbors []int32
	}{
		{"empty", 0, nil, nil, BuildOptions{}, []int64{0}, []int32{}},
		{"isolated nodes", 3, nil, nil, BuildOptions{}, []int64{0, 0, 0, 0}, []int32{}},
		{"directed", 3, []int32{0, 0, 2}, []int32{2, 1, 0}, BuildOptions{},
			[]int64{0, 2, 2, 3}, []int32{1, 2, 0}},
		{"duplicates removed", 2, []int32{0, 0, 0, 1}, []int32{1, 1, 1, 0}, BuildOptions{},
			[]int64{0, 1, 2}, []int32{1, 0}},
		{"self loops dropped", 2, []int32{0, 1, 1}, []int32{0, 1, 0}, BuildOptions{},
			[]int64{0, 0, 1}, []int32{0}},
		{"self loops kept", 2, []int32{0, 1, 1, 1}, []int32{0, 1, 0, 1}, BuildOptions{SelfLoops: KeepSelfLoops},
			[]int64{0, 1, 3}, []int32{0, 0, 1}},
		{"symmetrized", 3, []int32{0, 1}, []int32{1, 2}, BuildOptions{Symmetrize: true},
			[]int64{0, 1, 3, 4}, []int32{1, 0, 2, 1}},
		{"symmetrized with both directions given", 2, []int32{0, 1}, []int32{1, 0}, BuildOptions{Symmetrize: true},
			[]int64{0, 1, 2}, []int32{1, 0}},
		{"symmetrized self loop kept once", 2, []int32{1}, []int32{1}, BuildOptions{Symmetrize: true, SelfLoops: KeepSelfLoops},
			[]int64{0, 0, 1}, []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustBuild(t, tt.n, tt.src, tt.dst, tt.opt)
			if g.N != tt.n || !slices.Equal(g.Offsets, tt.offsets) || !slices.Equal(g.Neighbors, tt.neighbors) {
				t.Errorf("got N=%d offsets %v neighbours %v, want N=%d offsets %v neighbours %v",
					g.N, g.Offsets, g.Neighbors, tt.n, tt.offsets, tt.neighbors)
			}
		})
	}
}

func TestFromEdgesErrors(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		src, dst []int32
		opt      BuildOptions
		want     string // substring of the error
	}{
		{"negative n", -1, nil, nil, BuildOptions{}, "node count -1"},
		{"length mismatch", 3, []int32{0, 1}, []int32{1}, BuildOptions{}, "edge 1"},
		{"source too large", 3, []int32{0, 3}, []int32{1, 1}, BuildOptions{}, "edge 1: source 3"},
		{"negative destination", 3, []int32{0, 1, 2}, []int32{1, 2, -1}, BuildOptions{}, "edge 2: destination -1"},
		{"first bad edge named", 3, []int32{0, 9, 9}, []int32{5, 1, 1}, BuildOptions{}, "edge 0: destination 5"},
		{"edge with no nodes", 0, []int32{0}, []int32{0}, BuildOptions{}, "edge 0"},
		{"unknown self-loop option", 2, nil, nil, BuildOptions{SelfLoops: 7}, "self-loop option 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromEdges(tt.n, tt.src, tt.dst, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestFromEdgesErrorNamesLowestBadIndexInLargeInput(t *testing.T) {
	const m = 1 << 20
	src, dst := make([]int32, m), make([]int32, m)
	src[m-10], dst[700_000] = 100, -4
	_, err := FromEdges(10, src, dst, BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "edge 700000:") {
		t.Fatalf("got %v, want edge 700000 named", err)
	}
}

func randomEdges(rng *rand.Rand, n, m int) (src, dst []int32) {
	src, dst = make([]int32, m), make([]int32, m)
	for i := range src {
		src[i], dst[i] = int32(rng.IntN(n)), int32(rng.IntN(n))
	}
	return src, dst
}

func TestFromEdgesMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 40; trial++ {
		n := 1 + rng.IntN(60)
		m := rng.IntN(4 * n * n / 3)
		src, dst := randomEdges(rng, n, m)
		for _, opt := range []BuildOptions{
			{}, {Symmetrize: true}, {SelfLoops: KeepSelfLoops}, {Symmetrize: true, SelfLoops: KeepSelfLoops},
		} {
			got := mustBuild(t, n, src, dst, opt)
			if want := referenceBuild(n, src, dst, opt); !sameGraph(got, want) {
				t.Fatalf("n=%d m=%d %+v: got %v %v, want %v %v", n, m, opt, got.Offsets, got.Neighbors, want.Offsets, want.Neighbors)
			}
		}
	}
}

// A large enough input to run in parallel chunks, checked against the
// single-worker result and the reference.
func TestFromEdgesParallelDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, m := 5000, 300_000
	src, dst := randomEdges(rng, n, m)
	opt := BuildOptions{Symmetrize: true}
	g := mustBuild(t, n, src, dst, opt)
	prev := runtime.GOMAXPROCS(1)
	g1 := mustBuild(t, n, src, dst, opt)
	runtime.GOMAXPROCS(prev)
	if !reflect.DeepEqual(g, g1) {
		t.Fatal("result depends on the number of workers")
	}
	if !sameGraph(g, referenceBuild(n, src, dst, opt)) {
		t.Fatal("parallel build differs from the reference")
	}
}
