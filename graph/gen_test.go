package graph

import (
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// checkUndirected checks the invariants every generator promises.
func checkUndirected(t *testing.T, name string, g *Graph) {
	t.Helper()
	if err := checkGraph(g); err != nil {
		t.Fatalf("%s: invalid graph: %v", name, err)
	}
	if !g.IsSymmetric() {
		t.Fatalf("%s: not symmetric", name)
	}
	for v := 0; v < g.N; v++ {
		if g.HasEdge(int32(v), int32(v)) {
			t.Fatalf("%s: self loop at %d", name, v)
		}
	}
}

// checkDeterministic runs gen with one worker and with the default count, and
// with another seed, comparing the results.
func checkDeterministic(t *testing.T, name string, gen func(seed uint64) any) {
	t.Helper()
	a := gen(1)
	prev := runtime.GOMAXPROCS(1)
	b := gen(1)
	runtime.GOMAXPROCS(prev)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: result depends on GOMAXPROCS", name)
	}
	if reflect.DeepEqual(a, gen(2)) {
		t.Fatalf("%s: seeds 1 and 2 gave the same result", name)
	}
}

func TestErdosRenyi(t *testing.T) {
	tests := []struct {
		n int
		p float64
	}{{0, 0.5}, {1, 0.5}, {2, 1}, {50, 0}, {50, 1}, {300, 0.05}, {1000, 0.2}, {100000, 5e-5}}
	for _, tt := range tests {
		g, err := ErdosRenyi(tt.n, tt.p, 1)
		if err != nil {
			t.Fatal(err)
		}
		name := "ER"
		checkUndirected(t, name, g)
		pairs := float64(tt.n) * float64(max(tt.n-1, 0)) / 2
		mean, sd := tt.p*pairs, math.Sqrt(tt.p*(1-tt.p)*pairs)
		if got := float64(g.NumEdges()) / 2; math.Abs(got-mean) > 5*sd+1e-9 {
			t.Errorf("G(%d, %g): %g edges, want %g ± %g", tt.n, tt.p, got, mean, 5*sd)
		}
	}
	checkDeterministic(t, "ER", func(seed uint64) any {
		g, _ := ErdosRenyi(20000, 1e-3, seed)
		return g
	})
}

// Every pair should be an edge equally often: check the pairs of a small
// graph over many seeds.
func TestErdosRenyiUniformPairs(t *testing.T) {
	const n, p, trials = 6, 0.3, 4000
	counts := map[[2]int32]int{}
	for seed := uint64(0); seed < trials; seed++ {
		g, _ := ErdosRenyi(n, p, seed)
		for e := range edgeSet(g) {
			counts[e]++
		}
	}
	sd := math.Sqrt(p * (1 - p) * trials)
	for u := int32(0); u < n; u++ {
		for v := int32(0); v < n; v++ {
			if u == v {
				continue
			}
			if got := float64(counts[[2]int32{u, v}]); math.Abs(got-p*trials) > 5*sd {
				t.Errorf("pair (%d, %d) appeared %g times, want %g ± %g", u, v, got, p*trials, 5*sd)
			}
		}
	}
}

func TestRMAT(t *testing.T) {
	g, err := RMAT(14, 200000, RMATA, RMATB, RMATC, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkUndirected(t, "R-MAT", g)
	if g.N != 1<<14 || g.NumEdges() > 2*200000 || g.NumEdges() < 200000 {
		t.Fatalf("R-MAT: N=%d with %d entries", g.N, g.NumEdges())
	}
	// Skewed: node 0 is a hub.
	if avg := float64(g.NumEdges()) / float64(g.N); float64(g.Degree(0)) < 20*avg {
		t.Errorf("R-MAT: node 0 has degree %d, average %g; want a hub", g.Degree(0), avg)
	}
	// All mass in one quadrant: every edge is (0, 0) or (n-1, n-1), a loop.
	for _, q := range [][3]float64{{1, 0, 0}, {0, 0, 0}} {
		g, err := RMAT(5, 100, q[0], q[1], q[2], 1)
		if err != nil || g.NumEdges() != 0 {
			t.Errorf("R-MAT a,b,c=%v: %v, %v entries; want none", q, err, g.NumEdges())
		}
	}
	// Only b: every edge is (0, n-1).
	g, err = RMAT(5, 100, 0, 1, 0, 1)
	if err != nil || g.NumEdges() != 2 || !g.HasEdge(0, 31) {
		t.Errorf("R-MAT b=1: %v, edges %v", err, edgeSet(g))
	}
	checkDeterministic(t, "R-MAT", func(seed uint64) any {
		g, _ := RMAT(12, 150000, RMATA, RMATB, RMATC, seed)
		return g
	})
}

func TestBarabasiAlbert(t *testing.T) {
	for _, tt := range []struct{ n, m int }{{2, 1}, {4, 3}, {100, 1}, {5000, 4}} {
		g, err := BarabasiAlbert(tt.n, tt.m, 1)
		if err != nil {
			t.Fatal(err)
		}
		checkUndirected(t, "BA", g)
		if want := int64(2 * tt.m * (tt.n - tt.m)); g.NumEdges() != want {
			t.Errorf("BA(%d, %d): %d entries, want %d", tt.n, tt.m, g.NumEdges(), want)
		}
		for v := tt.m; v < tt.n; v++ {
			if g.Degree(v) < tt.m {
				t.Fatalf("BA(%d, %d): node %d has degree %d < m", tt.n, tt.m, v, g.Degree(v))
			}
		}
		// Node m links to all of the seed nodes.
		for u := 0; u < tt.m; u++ {
			if !g.HasEdge(int32(tt.m), int32(u)) {
				t.Fatalf("BA(%d, %d): node m not linked to seed node %d", tt.n, tt.m, u)
			}
		}
	}
	// Preferential attachment makes early nodes hubs.
	g, _ := BarabasiAlbert(20000, 3, 1)
	if g.Degree(maxDegreeNode(g)) < 100 {
		t.Errorf("BA: max degree %d, want a hub", g.Degree(maxDegreeNode(g)))
	}
	checkDeterministic(t, "BA", func(seed uint64) any {
		g, _ := BarabasiAlbert(3000, 3, seed)
		return g
	})
}

// maxDegreeNode returns a node of maximum degree.
func maxDegreeNode(g *Graph) int {
	best := 0
	for v := 1; v < g.N; v++ {
		if g.Degree(v) > g.Degree(best) {
			best = v
		}
	}
	return best
}

func TestSBM(t *testing.T) {
	cfg := SBMConfig{Nodes: 20000, Classes: 5, AvgDegree: 12, Homophily: 0.8, Features: 16, FeatureNoise: 1}
	g, x, labels, err := SBM(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkUndirected(t, "SBM", g)
	if x.Rows != cfg.Nodes || x.Cols != cfg.Features || len(labels) != cfg.Nodes {
		t.Fatalf("SBM: features %s, %d labels", x.Shape(), len(labels))
	}
	sizes := make([]int, cfg.Classes)
	for _, c := range labels {
		sizes[c]++
	}
	for c, s := range sizes {
		if s != cfg.Nodes/cfg.Classes {
			t.Errorf("SBM: class %d has %d nodes, want %d", c, s, cfg.Nodes/cfg.Classes)
		}
	}
	if avg := float64(g.NumEdges()) / float64(g.N); math.Abs(avg-cfg.AvgDegree) > 0.02*cfg.AvgDegree {
		t.Errorf("SBM: average degree %g, want %g", avg, cfg.AvgDegree)
	}
	var inside int64
	for v := 0; v < g.N; v++ {
		for _, u := range g.Adj(v) {
			if labels[u] == labels[v] {
				inside++
			}
		}
	}
	if h := float64(inside) / float64(g.NumEdges()); math.Abs(h-cfg.Homophily) > 0.01 {
		t.Errorf("SBM: homophily %g, want %g", h, cfg.Homophily)
	}
	// Learnable but not trivially: nearest class centroid on a node's own
	// features is mediocre, on its neighbourhood mean much better.
	own := centroidAccuracy(x, labels, cfg.Classes)
	agg := centroidAccuracy(aggregate(g, x), labels, cfg.Classes)
	t.Logf("nearest-centroid accuracy: own features %.3f, neighbourhood mean %.3f", own, agg)
	if own > 0.8 || own < 1.5/float64(cfg.Classes) || agg < own+0.15 {
		t.Errorf("SBM features: own accuracy %.3f, aggregated %.3f", own, agg)
	}
	checkDeterministic(t, "SBM", func(seed uint64) any {
		g, x, labels, _ := SBM(SBMConfig{Nodes: 30000, Classes: 3, AvgDegree: 6, Homophily: 0.7, Features: 3, FeatureNoise: 0.5}, seed)
		return []any{g, x, labels}
	})
}

// aggregate returns, per node, the mean features over itself and its
// neighbours.
func aggregate(g *Graph, x *tensor.Matrix) *tensor.Matrix {
	out := tensor.New(x.Rows, x.Cols)
	for v := 0; v < g.N; v++ {
		row := out.Row(v)
		copy(row, x.Row(v))
		for _, u := range g.Adj(v) {
			for j, xv := range x.Row(int(u)) {
				row[j] += xv
			}
		}
		for j := range row {
			row[j] /= float32(g.Degree(v) + 1)
		}
	}
	return out
}

// centroidAccuracy classifies every row by its nearest class centroid.
func centroidAccuracy(x *tensor.Matrix, labels []int32, classes int) float64 {
	centroids := make([][]float64, classes)
	counts := make([]int, classes)
	for c := range centroids {
		centroids[c] = make([]float64, x.Cols)
	}
	for v, c := range labels {
		counts[c]++
		for j, xv := range x.Row(v) {
			centroids[c][j] += float64(xv)
		}
	}
	for c := range centroids {
		for j := range centroids[c] {
			centroids[c][j] /= float64(counts[c])
		}
	}
	correct := 0
	for v, label := range labels {
		best, bestDist := -1, math.Inf(1)
		for c, centroid := range centroids {
			var d float64
			for j, xv := range x.Row(v) {
				d += (float64(xv) - centroid[j]) * (float64(xv) - centroid[j])
			}
			if d < bestDist {
				best, bestDist = c, d
			}
		}
		if best == int(label) {
			correct++
		}
	}
	return float64(correct) / float64(len(labels))
}

func TestGeneratorErrors(t *testing.T) {
	sbm := func(cfg SBMConfig) error { _, _, _, err := SBM(cfg, 1); return err }
	ok := SBMConfig{Nodes: 100, Classes: 4, AvgDegree: 5, Homophily: 0.5, Features: 2, FeatureNoise: 1}
	with := func(change func(*SBMConfig)) SBMConfig { c := ok; change(&c); return c }
	er := func(n int, p float64) error { _, err := ErdosRenyi(n, p, 1); return err }
	rmat := func(scale int, edges int64, a, b, c float64) error {
		_, err := RMAT(scale, edges, a, b, c, 1)
		return err
	}
	ba := func(n, m int) error { _, err := BarabasiAlbert(n, m, 1); return err }
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"SBM valid", sbm(ok), ""},
		{"SBM no nodes", sbm(with(func(c *SBMConfig) { c.Nodes = 0 })), "nodes 0"},
		{"SBM no classes", sbm(with(func(c *SBMConfig) { c.Classes = 0 })), "classes 0"},
		{"SBM negative degree", sbm(with(func(c *SBMConfig) { c.AvgDegree = -1 })), "average degree -1"},
		{"SBM NaN degree", sbm(with(func(c *SBMConfig) { c.AvgDegree = math.NaN() })), "average degree NaN"},
		{"SBM degree too high", sbm(with(func(c *SBMConfig) { c.AvgDegree = 100 })), "average degree 100"},
		{"SBM homophily", sbm(with(func(c *SBMConfig) { c.Homophily = 1.5 })), "homophily 1.5"},
		{"SBM features", sbm(with(func(c *SBMConfig) { c.Features = -2 })), "feature dimension -2"},
		{"SBM noise", sbm(with(func(c *SBMConfig) { c.FeatureNoise = math.Inf(1) })), "feature noise +Inf"},
		{"SBM one class", sbm(with(func(c *SBMConfig) { c.Classes = 1 })), "at least 2 classes"},
		{"SBM tiny classes", sbm(with(func(c *SBMConfig) { c.Classes = 60 })), "needs at least 120 nodes"},
		{"ER valid", er(10, 0.5), ""},
		{"ER negative n", er(-1, 0.5), "node count -1"},
		{"ER p", er(10, 1.2), "probability 1.2"},
		{"ER NaN p", er(10, math.NaN()), "probability NaN"},
		{"ER too many edges", er(MaxNodes, 0.5), "too many"},
		{"R-MAT valid", rmat(3, 10, 0.25, 0.25, 0.25), ""},
		{"R-MAT scale", rmat(31, 10, RMATA, RMATB, RMATC), "scale 31"},
		{"R-MAT edges", rmat(3, -1, RMATA, RMATB, RMATC), "edge count -1"},
		{"R-MAT a", rmat(3, 10, -0.1, RMATB, RMATC), "a = -0.1"},
		{"R-MAT sum", rmat(3, 10, 0.5, 0.5, 0.5), "exceed 1"},
		{"BA valid", ba(10, 2), ""},
		{"BA m zero", ba(10, 0), "n=10, m=0"},
		{"BA m too big", ba(3, 3), "n=3, m=3"},
	}
	for _, tt := range tests {
		switch {
		case tt.want == "" && tt.err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, tt.err)
		case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, tt.err, tt.want)
		}
	}
}

// SBMGraph and the features drawn chunk by chunk, in reverse order into
// one reused buffer, are SBM's graph, labels and features exactly.
func TestSBMInChunks(t *testing.T) {
	cfg := SBMConfig{Nodes: 9001, Classes: 4, AvgDegree: 8, Homophily: 0.8, Features: 40, FeatureNoise: 1}
	g, x, labels, err := SBM(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	g2, labels2, err := SBMGraph(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, g2) || !reflect.DeepEqual(labels, labels2) {
		t.Fatal("SBMGraph differs from SBM's graph and labels")
	}
	f := NewSBMFeatures(cfg, labels2, 3)
	if f.Chunks() < 3 {
		t.Fatalf("%d chunks: the test wants several", f.Chunks())
	}
	var buf []float32
	for k := f.Chunks() - 1; k >= 0; k-- {
		lo, hi := f.ChunkRows(k)
		buf = append(buf[:0], make([]float32, (hi-lo)*cfg.Features)...)
		f.Fill(k, buf)
		if !reflect.DeepEqual(buf, x.Data[lo*cfg.Features:hi*cfg.Features]) {
			t.Fatalf("chunk %d (nodes %d to %d) differs from SBM's rows", k, lo, hi)
		}
	}
	if _, hi := f.ChunkRows(f.Chunks() - 1); hi != cfg.Nodes {
		t.Fatalf("the chunks end at node %d of %d", hi, cfg.Nodes)
	}
}
