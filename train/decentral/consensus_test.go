package decentral

import (
	"math"
	"testing"

	"github.com/graft-gnn/graft/graph"
)

func TestMetropolisHastingsDoublyStochasticSymmetric(t *testing.T) {
	ba, _ := graph.BarabasiAlbert(60, 2, 4)
	star, _ := graph.FromEdges(6, []int32{0, 0, 0, 0, 0}, []int32{1, 2, 3, 4, 5}, graph.BuildOptions{Symmetrize: true})
	for _, tt := range []struct {
		name string
		g    *graph.Graph
	}{
		{"erdos-renyi", randomGraph(t, 50, 0.1, 1)},
		{"dense", randomGraph(t, 30, 0.8, 2)},
		{"barabasi-albert", ba},
		{"star", star},
		{"with isolated nodes", randomGraph(t, 40, 0.02, 3)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := MetropolisHastings(tt.g)
			if err != nil {
				t.Fatal(err)
			}
			g := tt.g
			colSum := make([]float64, g.N)
			for i := range g.N {
				d, off := c.row(i)
				rowSum := d
				colSum[i] += d
				if d < 0 {
					t.Errorf("c_%d%d = %v < 0", i, i, d)
				}
				for k, j := range g.Adj(i) {
					rowSum += off[k]
					colSum[j] += off[k]
					_, back := c.row(int(j))
					for kk, jj := range g.Adj(int(j)) {
						if int(jj) == i && back[kk] != off[k] {
							t.Errorf("c_%d%d = %v but c_%d%d = %v", i, j, off[k], j, i, back[kk])
						}
					}
					want := 1 / float64(max(g.Degree(i), g.Degree(int(j)))+1)
					if off[k] != want {
						t.Errorf("c_%d%d = %v, want 1/max(d_i, d_j) = %v", i, j, off[k], want)
					}
				}
				if math.Abs(rowSum-1) > 1e-12 {
					t.Errorf("row %d sums to %v", i, rowSum)
				}
			}
			for j, s := range colSum {
				if math.Abs(s-1) > 1e-12 {
					t.Errorf("column %d sums to %v", j, s)
				}
			}
		})
	}
}

func TestTopologyErrors(t *testing.T) {
	directed, _ := graph.FromEdges(3, []int32{0, 1}, []int32{1, 2}, graph.BuildOptions{})
	loop := &graph.Graph{N: 2, Offsets: []int64{0, 2, 3}, Neighbors: []int32{0, 1, 0}}
	for name, g := range map[string]*graph.Graph{"nil": nil, "directed": directed, "self loop": loop} {
		if _, err := MetropolisHastings(g); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDeterministicUnderFaults(t *testing.T) {
	m := Model{Dims: []int{3, 4, 1}, Hops: 1, Hidden: Tanh}
	g := randomGraph(t, 30, 0.15, 8)
	s, _ := NormalizedLaplacian(g)
	faults := &Faults{Drop: 0.2, Seed: 5, Cuts: []LinkCut{{A: int(g.Neighbors[0]), B: 0, From: 3, Rounds: 20}},
		Outages: []Outage{{Node: 7, From: 10, Rounds: 30}}}
	run := func() [][]float64 {
		rng := newRand(1, 1)
		net := mustNetwork(t, Config{Model: m, Graph: g, Params: m.Init(rng), Piggyback: true,
			Faults: faults, Optimizer: Optimizer{Rule: Adam, LR: 0.01}})
		for range 5 {
			if _, err := net.Train(randomBatch(t, m, s, 3, rng)); err != nil {
				t.Fatal(err)
			}
		}
		ps, _ := net.Params()
		return ps
	}
	a, b := run(), run()
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("agent %d parameter %d: %v then %v", i, j, a[i][j], b[i][j])
			}
		}
	}
}

func TestOutageFreezesAgent(t *testing.T) {
	m := Model{Dims: []int{2, 1}, Hops: 1}
	g := randomGraph(t, 10, 0.5, 1)
	s, _ := NormalizedLaplacian(g)
	rng := newRand(2, 2)
	params := m.Init(rng)
	net := mustNetwork(t, Config{Model: m, Graph: g, Params: params, Optimizer: Optimizer{LR: 0.1},
		Faults: &Faults{Outages: []Outage{{Node: 3, From: 0, Rounds: 1000}}}})
	st, err := net.Train(randomBatch(t, m, s, 2, rng))
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := net.Params()
	if st.Away != 1 || maxRelDiff(ps[3], params) != 0 {
		t.Errorf("away=%d; the absent agent's parameters moved by %.3g", st.Away, maxRelDiff(ps[3], params))
	}
	if maxRelDiff(ps[0], params) == 0 {
		t.Error("a present agent did not update")
	}
}
