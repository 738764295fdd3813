package graph

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// Random numbers. Every generator draws from math/rand/v2's PCG. Work is cut
// into chunks of a fixed number of items (edges, nodes or node pairs) that
// depends only on the parameters, never on the number of workers, and chunk k
// of a generator's stage s draws from rand.NewPCG(seed, s<<48 | k). So the
// same parameters and seed give the same graph on any machine and any
// GOMAXPROCS, and chunks can be generated in parallel.
const genChunk = 1 << 16

// Stages of the generators, one random stream family each.
const (
	streamLabels uint64 = iota + 1
	streamMeans
	streamFeatures
	streamEdges
	streamSequential // for inherently sequential generators
)

func chunkRNG(seed, stage uint64, chunk int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stage<<48|uint64(chunk)))
}

// forChunks runs body(k, lo, hi) for the chunks [k·genChunk, (k+1)·genChunk)
// of [0, n) in parallel.
func forChunks(n int, body func(k, lo, hi int)) {
	chunks := (n + genChunk - 1) / genChunk
	parallel.For(chunks, 1, rangeTask(func(clo, chi int) {
		for k := clo; k < chi; k++ {
			body(k, k*genChunk, min((k+1)*genChunk, n))
		}
	}))
}

// SBMConfig describes a stochastic block model with node features.
type SBMConfig struct {
	Nodes   int
	Classes int // node labels 0..Classes-1, balanced to within one node
	// AvgDegree is the mean number of stored (directed) entries per node, so
	// the graph has about Nodes·AvgDegree/2 undirected edges; a few percent
	// fewer when duplicates are likely (dense graphs, small classes).
	AvgDegree float64
	// Homophily is the expected fraction of edges joining two nodes of the
	// same class, in [0, 1]; 1/Classes gives no class structure.
	Homophily float64
	// Features is the feature dimension (0 for none). Node v's features are
	// its class mean plus Gaussian noise of standard deviation FeatureNoise
	// per dimension; the class means are drawn from N(0, I/Features), so
	// they have about unit norm and lie about √2 apart whatever the
	// dimension. With FeatureNoise near 1 a node's own features classify it
	// poorly, while averaging over its (mostly same-class) neighbours
	// recovers the class: learnable, but only by using the graph.
	Features     int
	FeatureNoise float64
}

// SBM generates an undirected stochastic block model without self loops,
// with class-correlated features (Nodes×Features) and labels.
//
// Every edge picks its first end uniformly, then with probability Homophily
// a second end uniformly in the same class and otherwise uniformly among the
// other classes, so degrees are about Poisson(AvgDegree) in every class.
func SBM(cfg SBMConfig, seed uint64) (*Graph, *tensor.Matrix, []int32, error) {
	g, labels, err := SBMGraph(cfg, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	return g, sbmFeatures(cfg, labels, seed), labels, nil
}

// sbmFeatures is every row of NewSBMFeatures, in one matrix.
func sbmFeatures(cfg SBMConfig, labels []int32, seed uint64) *tensor.Matrix {
	x := tensor.New(cfg.Nodes, cfg.Features)
	f := NewSBMFeatures(cfg, labels, seed)
	parallel.For(f.Chunks(), 1, rangeTask(func(clo, chi int) {
		for k := clo; k < chi; k++ {
			lo, hi := f.ChunkRows(k)
			f.Fill(k, x.Data[lo*cfg.Features:hi*cfg.Features])
		}
	}))
	return x
}

// SBMGraph is SBM without the features: the graph and the labels, the
// same as SBM's for the same configuration and seed. NewSBMFeatures then
// gives the features chunk by chunk, so that a caller can write them
// without ever holding them all.
func SBMGraph(cfg SBMConfig, seed uint64) (*Graph, []int32, error) {
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	n, k := cfg.Nodes, cfg.Classes
	labels, members, classStart := balancedLabels(n, k, seed)

	undirected := int(math.Round(float64(n) * cfg.AvgDegree / 2))
	src, dst := make([]int32, undirected), make([]int32, undirected)
	forChunks(undirected, func(chunk, lo, hi int) {
		rng := chunkRNG(seed, streamEdges, chunk)
		for i := lo; i < hi; i++ {
			u := int32(rng.IntN(n))
			c := labels[u]
			start, size := classStart[c], classStart[c+1]-classStart[c]
			var v int32
			if rng.Float64() < cfg.Homophily {
				for v = u; v == u; {
					v = members[start+rng.IntN(size)]
				}
			} else {
				j := rng.IntN(n - size)
				if j >= start {
					j += size // skip class c's block of members
				}
				v = members[j]
			}
			src[i], dst[i] = u, v
		}
	})
	g, err := FromEdges(n, src, dst, BuildOptions{Symmetrize: true})
	if err != nil {
		return nil, nil, err
	}
	return g, labels, nil
}

func (cfg SBMConfig) validate() error {
	switch {
	case cfg.Nodes < 1 || cfg.Nodes > MaxNodes:
		return fmt.Errorf("graph: SBM nodes %d outside [1, %d]", cfg.Nodes, MaxNodes)
	case cfg.Classes < 1 || cfg.Classes > cfg.Nodes:
		return fmt.Errorf("graph: SBM classes %d outside [1, nodes=%d]", cfg.Classes, cfg.Nodes)
	case !(cfg.AvgDegree >= 0) || cfg.AvgDegree > float64(cfg.Nodes-1):
		return fmt.Errorf("graph: SBM average degree %g outside [0, nodes-1=%d]", cfg.AvgDegree, cfg.Nodes-1)
	case !(cfg.Homophily >= 0 && cfg.Homophily <= 1):
		return fmt.Errorf("graph: SBM homophily %g outside [0, 1]", cfg.Homophily)
	case cfg.Features < 0:
		return fmt.Errorf("graph: SBM feature dimension %d is negative", cfg.Features)
	case !(cfg.FeatureNoise >= 0) || math.IsInf(cfg.FeatureNoise, 1):
		return fmt.Errorf("graph: SBM feature noise %g is not a finite non-negative number", cfg.FeatureNoise)
	}
	if cfg.AvgDegree > 0 {
		if cfg.Homophily < 1 && cfg.Classes < 2 {
			return fmt.Errorf("graph: SBM homophily %g needs at least 2 classes for edges between classes", cfg.Homophily)
		}
		if cfg.Homophily > 0 && cfg.Nodes < 2*cfg.Classes {
			return fmt.Errorf("graph: SBM with %d classes needs at least %d nodes for edges inside classes, has %d",
				cfg.Classes, 2*cfg.Classes, cfg.Nodes)
		}
	}
	return nil
}

// ClassFeatures gives n nodes a node-classification task of their own:
// balanced class labels dealt at random, and features drawn around a random
// mean per class with Gaussian noise of the given scale, as SBM's. It is
// for graphs generated without one (R-MAT), whose structure then says
// nothing about the labels.
func ClassFeatures(n, classes, features int, noise float64, seed uint64) (*tensor.Matrix, []int32, error) {
	cfg := SBMConfig{Nodes: n, Classes: classes, Features: features, FeatureNoise: noise}
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	labels, _, _ := balancedLabels(n, classes, seed)
	return sbmFeatures(cfg, labels, seed), labels, nil
}

// balancedLabels deals the classes round robin and shuffles them, so class
// sizes differ by at most one and ids say nothing about labels. members lists
// the nodes of class c at [classStart[c], classStart[c+1]).
func balancedLabels(n, k int, seed uint64) (labels, members []int32, classStart []int) {
	labels = make([]int32, n)
	for v := range labels {
		labels[v] = int32(v % k)
	}
	rng := chunkRNG(seed, streamLabels, 0)
	rng.Shuffle(n, func(i, j int) { labels[i], labels[j] = labels[j], labels[i] })

	classStart = make([]int, k+1)
	for _, c := range labels {
		classStart[c+1]++
	}
	for c := 0; c < k; c++ {
		classStart[c+1] += classStart[c]
	}
	next := append([]int(nil), classStart[:k]...)
	members = make([]int32, n)
	for v, c := range labels {
		members[next[c]] = int32(v)
		next[c]++
	}
	return labels, members, classStart
}

// SBMFeatures draws an SBM's node features in chunks of consecutive
// nodes: chunk k depends only on the configuration, the seed and k, so
// chunks may be drawn in any order, in parallel, or one at a time into a
// buffer that is written out and reused.
type SBMFeatures struct {
	cfg    SBMConfig
	labels []int32
	seed   uint64
	means  []float64 // class c's mean is means[c*F : (c+1)*F]
	rows   int       // nodes per chunk
}

// NewSBMFeatures returns the features of the SBM of cfg and seed whose
// labels SBMGraph gave: node v's row is its class mean plus Gaussian noise.
func NewSBMFeatures(cfg SBMConfig, labels []int32, seed uint64) *SBMFeatures {
	f := cfg.Features
	means := make([]float64, cfg.Classes*f)
	rng := chunkRNG(seed, streamMeans, 0)
	scale := 1 / math.Sqrt(float64(max(f, 1)))
	for i := range means {
		means[i] = rng.NormFloat64() * scale
	}
	// Chunks of nodes holding about genChunk values each.
	return &SBMFeatures{cfg: cfg, labels: labels, seed: seed, means: means, rows: max(1, genChunk/max(f, 1))}
}

// Chunks is the number of chunks (0 without features).
func (s *SBMFeatures) Chunks() int {
	if s.cfg.Features == 0 {
		return 0
	}
	return (s.cfg.Nodes + s.rows - 1) / s.rows
}

// ChunkRows is the nodes [lo, hi) of chunk k.
func (s *SBMFeatures) ChunkRows(k int) (lo, hi int) {
	return k * s.rows, min((k+1)*s.rows, s.cfg.Nodes)
}

// Fill writes chunk k's rows, row-major, to dst, which holds exactly
// (hi-lo)·Features values.
func (s *SBMFeatures) Fill(k int, dst []float32) {
	f := s.cfg.Features
	lo, hi := s.ChunkRows(k)
	dst = dst[:(hi-lo)*f]
	rng := chunkRNG(s.seed, streamFeatures, k)
	for v := lo; v < hi; v++ {
		c := int(s.labels[v])
		mean := s.means[c*f : (c+1)*f]
		row := dst[(v-lo)*f : (v-lo+1)*f]
		for j := range row {
			row[j] = float32(mean[j] + s.cfg.FeatureNoise*rng.NormFloat64())
		}
	}
}

// Graph500's R-MAT quadrant probabilities, the usual choice for RMAT's a, b
// and c (d = 1-a-b-c = 0.05).
const (
	RMATA = 0.57
	RMATB = 0.19
	RMATC = 0.19
)

// RMAT generates an R-MAT graph (Chakrabarti, Zhan and Faloutsos) on
// 2^scale nodes: each of the given number of edges descends scale levels of
// the adjacency matrix, picking the top-left, top-right, bottom-left or
// bottom-right quadrant with probabilities a, b, c and d = 1-a-b-c. The
// result is symmetrised, without self loops or duplicates, so it stores at
// most 2·edges entries. Node ids are not scrambled: low ids are the hubs
// (Permute with a random permutation to spread them).
func RMAT(scale int, edges int64, a, b, c float64, seed uint64) (*Graph, error) {
	if scale < 0 || scale > 30 {
		return nil, fmt.Errorf("graph: R-MAT scale %d outside [0, 30]", scale)
	}
	if edges < 0 || edges > math.MaxInt32*8 {
		return nil, fmt.Errorf("graph: R-MAT edge count %d outside [0, %d]", edges, int64(math.MaxInt32)*8)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"a", a}, {"b", b}, {"c", c}} {
		if !(p.v >= 0 && p.v <= 1) {
			return nil, fmt.Errorf("graph: R-MAT probability %s = %g outside [0, 1]", p.name, p.v)
		}
	}
	if a+b+c > 1+1e-9 {
		return nil, fmt.Errorf("graph: R-MAT probabilities a+b+c = %g exceed 1", a+b+c)
	}
	// Each level compares 32 random bits with these cumulative thresholds.
	threshold := func(p float64) uint64 { return min(uint64(math.Round(p*(1<<32))), 1<<32) }
	tA, tAB, tABC := threshold(a), threshold(a+b), threshold(a+b+c)

	m := int(edges)
	src, dst := make([]int32, m), make([]int32, m)
	forChunks(m, func(chunk, lo, hi int) {
		rng := chunkRNG(seed, streamEdges, chunk)
		for i := lo; i < hi; i++ {
			var u, v uint32
			var bitsLeft int
			var r uint64
			for level := 0; level < scale; level++ {
				if bitsLeft == 0 {
					r, bitsLeft = rng.Uint64(), 64
				}
				x := r & (1<<32 - 1)
				r >>= 32
				bitsLeft -= 32
				// Branch-free quadrant choice (the branches are unpredictable):
				// bottom half from a+b on, right half in [a, a+b) and from a+b+c.
				geA, geAB, geABC := atLeast(x, tA), atLeast(x, tAB), atLeast(x, tABC)
				u = u<<1 | geAB
				v = v<<1 | (geA ^ geAB ^ geABC)
			}
			src[i], dst[i] = int32(u), int32(v)
		}
	})
	return FromEdges(1<<scale, src, dst, BuildOptions{Symmetrize: true})
}

// atLeast returns 1 if x >= t and 0 otherwise, for x, t < 2^63.
func atLeast(x, t uint64) uint32 { return uint32(1 ^ (x-t)>>63) }

// BarabasiAlbert generates an undirected preferential-attachment graph on n
// nodes as networkx's barabasi_albert_graph does: nodes 0..m-1 start without
// edges, node m links to all of them, and every later node links to m
// distinct earlier nodes chosen with probability proportional to degree. It
// has m·(n-m) undirected edges. Generation is sequential.
func BarabasiAlbert(n, m int, seed uint64) (*Graph, error) {
	if m < 1 || m >= n || n > MaxNodes {
		return nil, fmt.Errorf("graph: Barabási–Albert needs 1 <= m < n <= %d, got n=%d, m=%d", MaxNodes, n, m)
	}
	edges := m * (n - m)
	src, dst := make([]int32, 0, edges), make([]int32, 0, edges)
	// Every edge end once: a uniform pick from it is degree-proportional.
	ends := make([]int32, 0, 2*edges)
	lastPickedBy := make([]int32, n) // which new node last chose each node
	for i := range lastPickedBy {
		lastPickedBy[i] = -1
	}
	targets := make([]int32, m)
	for i := range targets {
		targets[i] = int32(i)
	}
	rng := chunkRNG(seed, streamSequential, 0)
	for source := int32(m); int(source) < n; source++ {
		for _, t := range targets {
			src, dst = append(src, source), append(dst, t)
			ends = append(ends, t, source)
		}
		if int(source)+1 == n {
			break
		}
		targets = targets[:0]
		for len(targets) < m {
			t := ends[rng.IntN(len(ends))]
			if lastPickedBy[t] != source {
				lastPickedBy[t] = source
				targets = append(targets, t)
			}
		}
	}
	return FromEdges(n, src, dst, BuildOptions{Symmetrize: true})
}

// ErdosRenyi generates G(n, p): every unordered pair of distinct nodes is an
// edge with probability p, independently. It skips over non-edges with
// geometrically distributed jumps (Batagelj and Brandes), so the cost is in
// the edges, not the n(n-1)/2 pairs.
func ErdosRenyi(n int, p float64, seed uint64) (*Graph, error) {
	if n < 0 || n > MaxNodes {
		return nil, fmt.Errorf("graph: Erdős–Rényi node count %d outside [0, %d]", n, MaxNodes)
	}
	if !(p >= 0 && p <= 1) {
		return nil, fmt.Errorf("graph: Erdős–Rényi probability %g outside [0, 1]", p)
	}
	pairs := uint64(n) * uint64(max(n-1, 0)) / 2
	expected := p * float64(pairs)
	if expected > float64(math.MaxInt32)*8 {
		return nil, fmt.Errorf("graph: Erdős–Rényi with n=%d, p=%g expects %.3g edges, too many", n, p, expected)
	}
	if p == 0 || pairs == 0 {
		return FromEdges(n, nil, nil, BuildOptions{})
	}
	// The pairs (v, u), u < v, in order of v then u, have linear index
	// v(v-1)/2 + u. Chunks are equal ranges of that index.
	chunks := int(min(max(expected/genChunk, 1), 1<<16, float64(max(pairs, 1))))
	type edgeList struct{ src, dst []int32 }
	lists := make([]edgeList, chunks)
	logMiss := math.Log1p(-p)
	parallel.For(chunks, 1, rangeTask(func(clo, chi int) {
		for k := clo; k < chi; k++ {
			lo, hi := splitRange(pairs, uint64(k), uint64(chunks)), splitRange(pairs, uint64(k+1), uint64(chunks))
			rng := chunkRNG(seed, streamEdges, k)
			// Room for the expected count plus a few standard deviations,
			// so that appends rarely regrow.
			want := p * float64(hi-lo)
			capacity := int(want + 4*math.Sqrt(want) + 16)
			list := edgeList{make([]int32, 0, capacity), make([]int32, 0, capacity)}
			v := pairRow(lo)
			rowStart := v * (v - 1) / 2
			for idx := lo; ; idx++ {
				if p < 1 {
					skip := math.Floor(math.Log(1-rng.Float64()) / logMiss)
					if skip >= float64(hi-idx) {
						break
					}
					idx += uint64(skip)
				}
				if idx >= hi {
					break
				}
				for idx >= rowStart+v {
					rowStart += v
					v++
				}
				list.src = append(list.src, int32(v))
				list.dst = append(list.dst, int32(idx-rowStart))
			}
			lists[k] = list
		}
	}))
	bounds := make([]int, chunks+1)
	for k := range bounds {
		bounds[k] = k
	}
	return scatterBuild(n, bounds, func(lo, hi int, emit func(s, d int32)) {
		for _, list := range lists[lo:hi] {
			for i, s := range list.src {
				emit(s, list.dst[i])
				emit(list.dst[i], s)
			}
		}
	}, false), nil
}

// splitRange returns ⌊total·k/parts⌋ without overflow, for k <= parts.
func splitRange(total, k, parts uint64) uint64 {
	hi, lo := bits.Mul64(total, k)
	q, _ := bits.Div64(hi, lo, parts)
	return q
}

// pairRow returns the row v of pair index idx: the largest v with
// v(v-1)/2 <= idx.
func pairRow(idx uint64) uint64 {
	v := uint64((1 + math.Sqrt(1+8*float64(idx))) / 2)
	for v > 1 && v*(v-1)/2 > idx {
		v--
	}
	for (v+1)*v/2 <= idx {
		v++
	}
	return max(v, 1)
}
