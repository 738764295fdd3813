package partition

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/graph"
)

// testGraph is a named graph shape for property tests.
type testGraph struct {
	name string
	g    *graph.Graph
}

func mustGraph(t testing.TB, g *graph.Graph, err error) *graph.Graph {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// must unwraps a (graph, error) result: must(t)(graph.FromEdges(...)).
func must(t testing.TB) func(*graph.Graph, error) *graph.Graph {
	return func(g *graph.Graph, err error) *graph.Graph {
		t.Helper()
		return mustGraph(t, g, err)
	}
}

func undirectedFromPairs(t testing.TB, n int, pairs [][2]int32) *graph.Graph {
	t.Helper()
	src := make([]int32, len(pairs))
	dst := make([]int32, len(pairs))
	for i, p := range pairs {
		src[i], dst[i] = p[0], p[1]
	}
	return must(t)(graph.FromEdges(n, src, dst, graph.BuildOptions{Symmetrize: true}))
}

func gridGraph(t testing.TB, w, h int) *graph.Graph {
	var pairs [][2]int32
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := int32(y*w + x)
			if x+1 < w {
				pairs = append(pairs, [2]int32{v, v + 1})
			}
			if y+1 < h {
				pairs = append(pairs, [2]int32{v, v + int32(w)})
			}
		}
	}
	return undirectedFromPairs(t, w*h, pairs)
}

// shapes returns graphs of many shapes: sparse and dense random graphs,
// power-law graphs, a grid, a path, a star, disconnected cliques, a graph
// with many isolated nodes and one with no edges at all.
func shapes(t testing.TB) []testGraph {
	t.Helper()
	var gs []testGraph
	add := func(name string, g *graph.Graph, err error) {
		gs = append(gs, testGraph{name, mustGraph(t, g, err)})
	}
	g, err := graph.ErdosRenyi(300, 0.02, 1)
	add("erdos-renyi-sparse", g, err)
	g, err = graph.ErdosRenyi(120, 0.3, 2)
	add("erdos-renyi-dense", g, err)
	g, err = graph.BarabasiAlbert(500, 3, 3)
	add("barabasi-albert", g, err)
	g, err = graph.RMAT(10, 4000, graph.RMATA, graph.RMATB, graph.RMATC, 4)
	add("rmat", g, err)
	gs = append(gs, testGraph{"grid", gridGraph(t, 20, 15)})

	var path, star, cliques, sparse [][2]int32
	for v := int32(0); v+1 < 200; v++ {
		path = append(path, [2]int32{v, v + 1})
	}
	for v := int32(1); v < 150; v++ {
		star = append(star, [2]int32{0, v})
	}
	for c := int32(0); c < 6; c++ { // six disconnected 10-cliques
		for i := int32(0); i < 10; i++ {
			for j := i + 1; j < 10; j++ {
				cliques = append(cliques, [2]int32{c*10 + i, c*10 + j})
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 60; i++ { // edges among the first 100 of 400 nodes
		sparse = append(sparse, [2]int32{int32(rng.IntN(100)), int32(rng.IntN(100))})
	}
	gs = append(gs,
		testGraph{"path", undirectedFromPairs(t, 200, path)},
		testGraph{"star", undirectedFromPairs(t, 150, star)},
		testGraph{"disconnected-cliques", undirectedFromPairs(t, 60, cliques)},
		testGraph{"mostly-isolated", undirectedFromPairs(t, 400, sparse)},
		testGraph{"no-edges", undirectedFromPairs(t, 50, nil)},
	)
	return gs
}

// recountCut counts each undirected edge between parts once, straight from
// the definition.
func recountCut(g *graph.Graph, parts []int32) int64 {
	var cut int64
	for v := 0; v < g.N; v++ {
		for _, u := range g.Adj(v) {
			if int(u) > v && parts[u] != parts[v] {
				cut++
			}
		}
	}
	return cut
}

func randomMask(n int, frac float64, seed uint64) ([]bool, []int32) {
	rng := rand.New(rand.NewPCG(seed, 7))
	mask := make([]bool, n)
	w := make([]int32, n)
	for v := range mask {
		if rng.Float64() < frac {
			mask[v], w[v] = true, 1
		}
	}
	return mask, w
}

func sameGraph(a, b *graph.Graph) error {
	if a.N != b.N || len(a.Neighbors) != len(b.Neighbors) {
		return fmt.Errorf("shape %d nodes/%d edges vs %d/%d", a.N, len(a.Neighbors), b.N, len(b.Neighbors))
	}
	for v := 0; v <= a.N; v++ {
		if a.Offsets[v] != b.Offsets[v] {
			return fmt.Errorf("offsets differ at %d", v)
		}
	}
	for i := range a.Neighbors {
		if a.Neighbors[i] != b.Neighbors[i] {
			return fmt.Errorf("neighbour %d differs: %d vs %d", i, a.Neighbors[i], b.Neighbors[i])
		}
	}
	return nil
}
