package sample

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/nn"
)

// tinyGraph has 7 nodes of degrees 1 to 4: a hub 0 joined to 1, 2, 3 and
// 4, the edge 1–2, the path 4–5–6, and a stored self loop at 3. Nodes 0, 2,
// 3, 5 and 6 are the training nodes.
func tinyGraph(t testing.TB) (*graph.Graph, []int32) {
	t.Helper()
	src := []int32{0, 0, 0, 0, 1, 4, 5, 3}
	dst := []int32{1, 2, 3, 4, 2, 5, 6, 3}
	g, err := graph.FromEdges(7, src, dst, graph.BuildOptions{Symmetrize: true, SelfLoops: graph.KeepSelfLoops})
	if err != nil {
		t.Fatal(err)
	}
	return g, []int32{0, 2, 3, 5, 6}
}

// saintCase is a sampler on the tiny graph and the exact probabilities
// that one of its units (a node draw, an edge draw, a walk) reaches node v
// (reach[v][v]) and both u and v (reach[u][v]), with the number of units a
// subgraph is made of.
type saintCase struct {
	name  string
	make  func(cfg Config, coverage float64) (*Saint, error)
	units int
	reach func(g *graph.Graph, train []int32) [][]float64
}

var saintCases = []saintCase{
	{"node", func(cfg Config, c float64) (*Saint, error) { return NewSaintNode(cfg, 2, c), nil }, 2, nodeReach},
	{"edge", func(cfg Config, c float64) (*Saint, error) { return NewSaintEdge(cfg, 1, c) }, 1, edgeReach},
	{"rw", func(cfg Config, c float64) (*Saint, error) { return NewSaintWalk(cfg, 1, 2, c), nil }, 1, walkReach},
}

// nodeReach: one draw is node v with probability ‖Â[:,v]‖²/Σ_w ‖Â[:,w]‖²,
// computed from graph.GCNNorm; a draw is one node, so never two.
func nodeReach(g *graph.Graph, _ []int32) [][]float64 {
	a := g.GCNNorm()
	reach := square(g.N)
	total := 0.0
	for p := range a.NNZ() {
		x := float64(a.Value(int64(p)))
		reach[a.Indices[p]][a.Indices[p]] += x * x
		total += x * x
	}
	for v := range g.N {
		reach[v][v] /= total
	}
	return reach
}

// edgeReach: one draw is the undirected edge {a, b} with probability
// (1/deg a + 1/deg b)/Σ over edges, degrees without self loops; it reaches
// a and b.
func edgeReach(g *graph.Graph, _ []int32) [][]float64 {
	deg := make([]float64, g.N)
	for v := range g.N {
		for _, u := range g.Adj(v) {
			if int(u) != v {
				deg[v]++
			}
		}
	}
	reach := square(g.N)
	total := 0.0
	for a := range g.N {
		for _, b := range g.Adj(a) {
			if int(b) > a {
				p := 1/deg[a] + 1/deg[b]
				reach[a][int(b)], reach[int(b)][a] = p, p
				reach[a][a] += p
				reach[b][b] += p
				total += p
			}
		}
	}
	for _, row := range reach {
		for u := range row {
			row[u] /= total
		}
	}
	return reach
}

// walkReach enumerates every walk of 2 steps from a uniform training root,
// each step to a uniform neighbour other than the node itself.
func walkReach(g *graph.Graph, train []int32) [][]float64 {
	reach := square(g.N)
	var walk func(path []int32, p float64)
	walk = func(path []int32, p float64) {
		v := path[len(path)-1]
		var next []int32
		for _, u := range g.Adj(int(v)) {
			if u != v {
				next = append(next, u)
			}
		}
		if len(path) == 3 || len(next) == 0 {
			seen := map[int32]bool{}
			for _, a := range path {
				seen[a] = true
			}
			for a := range seen {
				for b := range seen {
					reach[a][b] += p
				}
			}
			return
		}
		for _, u := range next {
			walk(append(slices.Clone(path), u), p/float64(len(next)))
		}
	}
	for _, r := range train {
		walk([]int32{r}, 1/float64(len(train)))
	}
	return reach
}

func square(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

// inclusion turns the reach of one unit into the exact probabilities for a
// subgraph of k independent units: P(v ∈ G_s) = 1 − (1 − r_v)^k and
// P(u, v ∈ G_s) = 1 − (1 − r_u)^k − (1 − r_v)^k + (1 − r_u − r_v + r_uv)^k.
func inclusion(reach [][]float64, k int) [][]float64 {
	n := len(reach)
	p := square(n)
	miss := func(x float64) float64 { return math.Pow(1-x, float64(k)) }
	for u := range n {
		for v := range n {
			if u == v {
				p[v][v] = 1 - miss(reach[v][v])
				continue
			}
			p[u][v] = 1 - miss(reach[u][u]) - miss(reach[v][v]) + miss(reach[u][u]+reach[v][v]-reach[u][v])
		}
	}
	return p
}

// exactCase makes c's sampler on the tiny graph, pre-sampled heavily, with
// the exact inclusion probabilities.
func exactCase(t *testing.T, c saintCase, agg Aggregation) (*Saint, *graph.Graph, []int32, [][]float64) {
	t.Helper()
	g, train := tinyGraph(t)
	cfg := Config{Graph: g, Train: train, BatchSize: 1, Layers: 2, Aggregation: agg, Seed: 5}
	s, err := c.make(cfg, 300000) // about 10⁶ subgraphs
	if err != nil {
		t.Fatal(err)
	}
	return s, g, train, inclusion(c.reach(g, train), c.units)
}

// "Getting the normalisation right is a known failure in other libraries"
// (pyg-team/pytorch_geometric#2130): the pre-sampled λ_v = C_v/N and
// α_{u,v} = C_{u,v}/C_v converge to the exact P(v ∈ G_s) and
// P((u, v) ∈ G_s | v ∈ G_s), computed in closed form from the exact
// probabilities of one draw (node and edge samplers) or by enumerating
// every walk. Tolerance: 5 binomial standard deviations,
// √(P(1−P)/N) for λ_v and √(α(1−α)/C_v) for α_{u,v} given C_v.
func TestSaintPresamplingConvergesToExactInclusion(t *testing.T) {
	for _, c := range saintCases {
		s, g, _, p := exactCase(t, c, GCN)
		N := float64(s.subgraphs)
		t.Logf("%s: %d subgraphs pre-sampled", c.name, s.subgraphs)
		for v := range g.N {
			lambda := float64(s.nodeCount[v]) / N
			if tol := 5 * math.Sqrt(p[v][v]*(1-p[v][v])/N); math.Abs(lambda-p[v][v]) > tol+1e-12 {
				t.Errorf("%s: λ_%d = %.5f, exactly %.5f (tolerance %.5f)", c.name, v, lambda, p[v][v], tol)
			}
			cv := float64(s.nodeCount[v])
			for q := g.Offsets[v]; q < g.Offsets[v+1]; q++ {
				u := g.Neighbors[q]
				alpha := float64(s.edgeCount[q]) / cv
				want := p[u][v] / p[v][v]
				if tol := 5 * math.Sqrt(want*(1-want)/cv); math.Abs(alpha-want) > tol+1e-12 {
					t.Errorf("%s: α_(%d,%d) = %.5f, exactly %.5f (tolerance %.5f)", c.name, u, v, alpha, want, tol)
				}
			}
		}
	}
}

// With a fixed loss ℓ_v per training node, the batches' Σ Weight·ℓ average
// to the mean training loss. The average over M batches must be within
// 5·sd/√M (sd the batches' sample standard deviation) of the expectation
// under the sampler's own weights, Σ_v P(v)·Weight_v·ℓ_v, computed
// exactly; and that within 5·sd/√M plus the pre-sampling's error, bounded
// by Σ_v ℓ_v/|T| · 5·√((1−P_v)/(P_v·N)) (the relative standard deviation
// of C_v/N, summed without cancellation), of the mean training loss.
func TestSaintLossIsUnbiased(t *testing.T) {
	const M = 200000
	for _, c := range saintCases {
		s, _, train, p := exactCase(t, c, GCN)
		loss := func(v int32) float64 { return 1 + float64(v) }
		want, expect, presample := 0.0, 0.0, 0.0
		for _, v := range train {
			want += loss(v) / float64(len(train))
			w := float64(s.subgraphs) / (float64(s.nodeCount[v]) * float64(len(train)))
			expect += p[v][v] * w * loss(v)
			presample += loss(v) / float64(len(train)) * 5 * math.Sqrt((1-p[v][v])/(p[v][v]*float64(s.subgraphs)))
		}
		var sum, sumSq, plain, rows float64
		var b Batch
		for e := range M {
			if err := s.Sample(e+1, 0, &b); err != nil {
				t.Fatal(err)
			}
			est := 0.0
			for i, r := range b.Loss {
				est += float64(b.Weight[i]) * loss(b.Output[r])
				plain += loss(b.Output[r])
			}
			rows += float64(len(b.Loss))
			sum += est
			sumSq += est * est
		}
		mean := sum / M
		se := math.Sqrt((sumSq/M - mean*mean) / M)
		if math.Abs(mean-expect) > 5*se {
			t.Errorf("%s: batches average %.5f, the sampler's weights expect %.5f (5 SE %.5f)", c.name, mean, expect, 5*se)
		}
		if math.Abs(mean-want) > 5*se+presample {
			t.Errorf("%s: batches average %.5f, the mean training loss is %.5f (tolerance %.5f)", c.name, mean, want, 5*se+presample)
		}
		t.Logf("%s: normalised loss %.5f against %.5f (tolerance %.5f = 5 SE %.5f + pre-sampling %.5f); the plain mean over loss rows gives %.5f",
			c.name, mean, want, 5*se+presample, 5*se, presample, plain/rows)
	}
}

// With fixed features x, the normalised aggregation of a node averages,
// over the batches that hold it, to the whole graph's row Σ_u Ã_{v,u}·x_u
// (GCN's Â and the mean operator). Tolerance per node and feature: 5·sd/√M_v
// (M_v batches hold v) plus the pre-sampling's error, bounded by
// Σ_u |Ã_{v,u}·x_u| · 5·√((1−α)/(α·C_v)), the relative standard deviation
// of C_{u,v}/C_v given C_v.
func TestSaintAggregationIsUnbiased(t *testing.T) {
	const M = 200000
	for _, agg := range []Aggregation{GCN, Mean} {
		for _, c := range saintCases {
			s, g, _, p := exactCase(t, c, agg)
			x := func(u int32, f int) float64 { return []float64{1 + float64(u), float64(u%3) - 1}[f] }
			full := g.GCNNorm()
			if agg == Mean {
				full = g.MeanNorm()
			}
			sum, sumSq, count := square(g.N), square(g.N), make([]float64, g.N)
			var b Batch
			for e := range M {
				if err := s.Sample(e+1, 0, &b); err != nil {
					t.Fatal(err)
				}
				op := blockOperator(b.Blocks[0])
				for i, v := range b.Output {
					count[v]++
					for f := range 2 {
						y := 0.0
						for q := op.Offsets[i]; q < op.Offsets[i+1]; q++ {
							y += float64(op.Value(q)) * x(b.Input[op.Indices[q]], f)
						}
						sum[v][f] += y
						sumSq[v][f] += y * y
					}
				}
			}
			for v := range int32(g.N) {
				if count[v] < 100 {
					t.Fatalf("%v %s: node %d in %v of %d batches", agg, c.name, v, count[v], M)
				}
				for f := range 2 {
					want, presample := 0.0, 0.0
					for q := full.Offsets[v]; q < full.Offsets[v+1]; q++ {
						u := full.Indices[q]
						term := float64(full.Value(q)) * x(u, f)
						want += term
						if u != v {
							alpha := p[u][v] / p[v][v]
							presample += math.Abs(term) * 5 * math.Sqrt((1-alpha)/(alpha*float64(s.nodeCount[v])))
						}
					}
					mean := sum[v][f] / count[v]
					se := math.Sqrt(max(sumSq[v][f]/count[v]-mean*mean, 0) / count[v])
					if math.Abs(mean-want) > 5*se+presample+1e-6 {
						t.Errorf("%v %s: node %d feature %d aggregates to %.5f on average, the whole graph gives %.5f (tolerance %.5f)",
							agg, c.name, v, f, mean, want, 5*se+presample)
					}
				}
			}
		}
	}
}

// Every batch is valid (checkBatch), one block whose destinations and
// sources are the subgraph's nodes, ascending; every stored edge between
// them is an entry; the loss rows are exactly its training nodes, with
// positive weights; the subgraph is within its budget; and a model runs
// on the block for all its layers.
func TestSaintBatches(t *testing.T) {
	g, x, _ := testGraph(t, 600, 12)
	for _, agg := range []Aggregation{GCN, Mean, Attention} {
		cfg := testConfig(g, agg, 2, 1)
		isTrain := map[int32]bool{}
		for _, v := range cfg.Train {
			isTrain[v] = true
		}
		for _, tc := range []struct {
			spec           string
			batches, limit int
		}{
			{"saint-node:40:5", (len(cfg.Train) + 39) / 40, 40},
			{"saint-edge:15:5", (len(cfg.Train) + 29) / 30, 30},
			{"saint-rw:10:3:5", (len(cfg.Train) + 29) / 30, 40},
		} {
			s, err := New(tc.spec, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if s.Batches() != tc.batches {
				t.Fatalf("%s: %d batches an epoch, want %d", tc.spec, s.Batches(), tc.batches)
			}
			var b Batch
			for i := range s.Batches() {
				if err := s.Sample(1, i, &b); err != nil {
					t.Fatal(err)
				}
				checkBatch(t, g, cfg.Train, &b)
				checkSubgraph(t, g, agg, isTrain, &b, tc.limit)
			}
			mc := nn.Config{Model: map[Aggregation]string{GCN: "gcn", Mean: "sage", Attention: "gat"}[agg], InFeatures: x.Cols, Hidden: 4, Classes: 3, Layers: 2, Heads: 2, Seed: 1}
			m, err := nn.NewModel(mc)
			if err != nil {
				t.Fatal(err)
			}
			out := m.Forward(b.Blocks, nn.DenseFeatures(x.SelectRows(b.Input)), true)
			if out.Rows != len(b.Output) {
				t.Fatalf("%s: %d rows of logits for %d output nodes", tc.spec, out.Rows, len(b.Output))
			}
		}
	}
}

func checkSubgraph(t *testing.T, g *graph.Graph, agg Aggregation, isTrain map[int32]bool, b *Batch, limit int) {
	t.Helper()
	if len(b.Blocks) != 1 || b.Blocks[0].NumDst != b.Blocks[0].NumSrc || !slices.Equal(b.Input, b.Output) {
		t.Fatalf("%d blocks; want one whose destinations are its sources", len(b.Blocks))
	}
	if len(b.Output) == 0 || len(b.Output) > limit || !slices.IsSorted(b.Output) {
		t.Fatalf("a subgraph of %d nodes (at most %d, ascending)", len(b.Output), limit)
	}
	in := map[int32]bool{}
	for _, v := range b.Output {
		in[v] = true
	}
	op := blockOperator(b.Blocks[0])
	for i, v := range b.Output {
		want := 0
		for _, u := range g.Adj(int(v)) {
			if in[u] && (u != v || agg == Mean) {
				want++
			}
		}
		if agg != Mean {
			want++
		}
		if got := int(op.Offsets[i+1] - op.Offsets[i]); got != want {
			t.Fatalf("node %d has %d entries; the induced subgraph gives %d", v, got, want)
		}
		if op.Values != nil {
			for q := op.Offsets[i]; q < op.Offsets[i+1]; q++ {
				if !(op.Values[q] > 0) || math.IsInf(float64(op.Values[q]), 0) {
					t.Fatalf("node %d: operator value %v", v, op.Values[q])
				}
			}
		}
	}
	var rows []int32
	for i, v := range b.Output {
		if isTrain[v] {
			rows = append(rows, int32(i))
		}
	}
	if !slices.Equal(rows, b.Loss) || len(b.Weight) != len(b.Loss) {
		t.Fatalf("loss rows %v with %d weights; the subgraph's training nodes are rows %v", b.Loss, len(b.Weight), rows)
	}
	for _, w := range b.Weight {
		if !(w > 0) || math.IsInf(float64(w), 0) {
			t.Fatalf("loss weight %v", w)
		}
	}
}

// "Every sampler is deterministic": pre-sampling and batches depend only
// on (seed, epoch, batch index), not on GOMAXPROCS; another epoch or index
// gives another batch.
func TestSaintIsDeterministic(t *testing.T) {
	g, _, _ := testGraph(t, 3000, 20)
	for _, spec := range []string{"saint-node:300:3", "saint-edge:150:3", "saint-rw:100:2:3"} {
		cfg := testConfig(g, GCN, 2, 1)
		checkBatchesDeterministic(t, func(epoch, index int) string {
			s, err := New(spec, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var b Batch
			if err := s.Sample(epoch, index, &b); err != nil {
				t.Fatal(err)
			}
			h := fnv.New64a()
			sat := s.(*Saint)
			fmt.Fprint(h, sat.subgraphs, sat.nodeCount, sat.edgeCount)
			return fmt.Sprint(h.Sum64()) + batchString(&b)
		})
	}
}

// Sampling reuses the batch's storage: once it has grown, a batch
// allocates only the closure that gives layer.build the self loops' value.
func TestSaintReusesStorage(t *testing.T) {
	g, _, _ := testGraph(t, 3000, 20)
	s, err := New("saint-rw:100:2:1", testConfig(g, GCN, 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	for i := range 3 { // grow the storage
		if err := s.Sample(1, i, &b); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Sample(2, 0, &b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%v allocations a batch", allocs)
	}
}

func TestSaintSpecErrors(t *testing.T) {
	g, _, _ := testGraph(t, 100, 5)
	cfg := testConfig(g, Mean, 2, 10)
	for _, spec := range []string{"saint-node", "saint-node:", "saint-node:0", "saint-node:a", "saint-node:5:0",
		"saint-node:5:-1", "saint-node:5:x", "saint-node:5:NaN", "saint-node:5:inf", "saint-node:5:50:1",
		"saint-edge:-3", "saint-edge:2.5", "saint-rw:5", "saint-rw:5:0", "saint-rw:0:2", "saint-rw:5:2:0",
		"saint-rw:5:2:3:4", "saint-rw:1073741824:2"} {
		if _, err := New(spec, cfg); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
	for _, spec := range []string{"saint-node:5", "saint-edge:5:0.5", "saint-rw:5:2:1.5"} {
		if _, err := New(spec, cfg); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	loops, err := graph.FromEdges(3, []int32{0, 1}, []int32{0, 1}, graph.BuildOptions{SelfLoops: graph.KeepSelfLoops})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New("saint-edge:5", Config{Graph: loops, Train: []int32{0}, BatchSize: 1, Layers: 1}); err == nil {
		t.Error("saint-edge accepted a graph with no edge between two nodes")
	}
}

// BenchmarkSaint measures pre-sampling (once, at the authors' coverage of
// 50; wall and process CPU time) and batches on sbm:200000:20's graph with a 10% training set, at the
// authors' Reddit budgets (a graph of the same size): 8000 nodes, 6000
// edges, 2000 walks of 4 steps.
func BenchmarkSaint(b *testing.B) {
	g, _, _, err := graph.SBM(graph.SBMConfig{Nodes: 200000, AvgDegree: 20, Classes: 8, Homophily: 0.8}, 1)
	if err != nil {
		b.Fatal(err)
	}
	var train []int32
	for v := int32(0); int(v) < g.N; v += 10 {
		train = append(train, v)
	}
	for _, spec := range []string{"saint-node:8000", "saint-edge:6000", "saint-rw:2000:4"} {
		b.Run(spec, func(b *testing.B) {
			cfg := Config{Graph: g, Train: train, BatchSize: 1, Layers: 2, Aggregation: GCN, Seed: 1}
			start, cpu := time.Now(), sysstat.CPUTime()
			s, err := New(spec, cfg)
			if err != nil {
				b.Fatal(err)
			}
			presample, presampleCPU := time.Since(start), sysstat.CPUTime()-cpu
			var batch Batch
			nodes, entries := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := s.Sample(1+i/s.Batches(), i%s.Batches(), &batch); err != nil {
					b.Fatal(err)
				}
				nodes += len(batch.Output)
				entries += int(blockOperator(batch.Blocks[0]).NNZ())
			}
			b.ReportMetric(presample.Seconds(), "presample-s")
			b.ReportMetric(presampleCPU.Seconds(), "presample-cpu-s")
			b.ReportMetric(float64(s.(*Saint).Presampled()), "subgraphs")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
			b.ReportMetric(float64(nodes)/float64(b.N), "nodes/batch")
			b.ReportMetric(float64(entries)/float64(b.N), "entries/batch")
		})
	}
}
