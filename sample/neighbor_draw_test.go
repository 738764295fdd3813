package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/graph"
)

// hubGraph is an undirected graph of 2500 nodes: node 0 a hub adjacent to
// nodes 1 to 1999, every other node but the last 100 with a few random
// neighbours, every seventh node with a self loop, the last 100 isolated.
func hubGraph(t *testing.T) *graph.Graph {
	t.Helper()
	const n = 2500
	r := rand.New(rand.NewPCG(5, 6))
	var src, dst []int32
	edge := func(u, v int32) { src, dst = append(src, u, v), append(dst, v, u) }
	for v := int32(1); v < 2000; v++ {
		edge(0, v)
	}
	for v := int32(1); v < n-100; v++ {
		for range 4 {
			edge(v, 1+int32(r.IntN(n-101)))
		}
		if v%7 == 0 {
			src, dst = append(src, v), append(dst, v)
		}
	}
	g, err := graph.FromEdges(n, src, dst, graph.BuildOptions{SelfLoops: graph.KeepSelfLoops})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// referenceNeighbor is the neighbour sampler's batch of seeds as its
// definition reads, with nothing made fast: from the seeds' layer down,
// destination v of layer l keeps k = min(fanout, d) of its d candidates
// (its neighbours, but for the mean not v itself), positions drawn by
// Floyd's algorithm from the stream of key neighborKey(seed, epoch, l)
// ^ v, in ascending order (all d when k = d); a layer's sources are its
// destinations, then the nodes they keep in order of first appearance.
// It returns per layer, the input layer's first, the sources and the
// operator's rows.
func referenceNeighbor(g *graph.Graph, agg Aggregation, seed uint64, epoch int, fanouts []int, seeds []int32) (srcs [][]int32, offsets [][]int64, indices [][]int32, values [][]float32) {
	layers := len(fanouts)
	invSqrt := func(v int32) float64 {
		d := len(g.Adj(int(v)))
		if !slices.Contains(g.Adj(int(v)), v) {
			d++
		}
		return 1 / math.Sqrt(float64(d))
	}
	srcs, offsets = make([][]int32, layers), make([][]int64, layers)
	indices, values = make([][]int32, layers), make([][]float32, layers)
	dst := seeds
	for l := layers - 1; l >= 0; l-- {
		fanout := fanouts[layers-1-l]
		src := slices.Clone(dst)
		local := map[int32]int32{}
		for i, v := range dst {
			local[v] = int32(i)
		}
		off, idx, val := []int64{0}, []int32{}, []float32{}
		for i, v := range dst {
			var cand []int32
			for _, u := range g.Adj(int(v)) {
				if u != v || agg == Mean {
					cand = append(cand, u)
				}
			}
			d, k := len(cand), len(cand)
			if fanout >= 0 {
				k = min(k, fanout)
			}
			var pos []int
			if k == d {
				for p := range d {
					pos = append(pos, p)
				}
			} else {
				r := stream{mix(neighborKey(seed, epoch, l) ^ uint64(v))}
				set := map[int]bool{}
				for j := d - k; j < d; j++ {
					if p := r.intn(j + 1); set[p] {
						set[j] = true
					} else {
						set[p] = true
					}
				}
				for p := range set {
					pos = append(pos, p)
				}
				slices.Sort(pos)
			}
			if agg != Mean {
				idx = append(idx, int32(i))
			}
			if agg == GCN {
				val = append(val, float32(invSqrt(v)*invSqrt(v)))
			}
			for _, p := range pos {
				u := cand[p]
				if _, ok := local[u]; !ok {
					local[u] = int32(len(src))
					src = append(src, u)
				}
				idx = append(idx, local[u])
				switch agg {
				case Mean:
					val = append(val, float32(1/float64(k)))
				case GCN:
					val = append(val, float32(invSqrt(v)*float64(d)/float64(k)*invSqrt(u)))
				}
			}
			off = append(off, int64(len(idx)))
		}
		srcs[l], offsets[l], indices[l], values[l] = src, off, idx, val
		dst = src
	}
	return srcs, offsets, indices, values
}

// The neighbour sampler draws the batches its definition does
// (referenceNeighbor): the same neighbours in the same order, the same
// sources in the same order and the same operator values, for every
// aggregation, on a graph with self loops, isolated nodes and a hub whose
// fanout keeps more than a thousand of its neighbours but not all.
func TestNeighborDrawsItsDefinition(t *testing.T) {
	g := hubGraph(t)
	seeds := []int32{0, 7, 2450, 1999, 3, 2000, 14, 1500, 2499, 100}
	for _, agg := range []Aggregation{GCN, Mean, Attention} {
		for _, fanouts := range [][]int{{1100, 70, 3}, {-1, 5, 2}, {15, 10, 5}, {2, -1, 64}} {
			cfg := testConfig(g, agg, len(fanouts), 10)
			s := NewNeighbor(cfg, fanouts)
			var b Batch
			for epoch := 1; epoch <= 2; epoch++ {
				if err := s.SampleSeeds(epoch, seeds, &b); err != nil {
					t.Fatal(err)
				}
				srcs, offsets, indices, values := referenceNeighbor(g, agg, cfg.Seed, epoch, fanouts, seeds)
				for l, blk := range b.Blocks {
					op := blockOperator(blk)
					var vals []float32
					if agg != Attention {
						vals = op.Values
					}
					if !slices.Equal(blk.SrcIDs, srcs[l]) || !slices.Equal(op.Offsets, offsets[l]) ||
						!slices.Equal(op.Indices, indices[l]) || !slices.Equal(vals, values[l]) {
						t.Fatalf("%s, fanouts %v, epoch %d: block %d is not the reference's", aggNames[agg], fanouts, epoch, l)
					}
				}
			}
		}
	}
}
