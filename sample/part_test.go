package sample

import (
	"errors"
	"testing"

	"github.com/graft-gnn/graft/graph"
)

// partGraphs splits g among k owners (node v to v mod k) as each worker
// holds it: its owned rows, and the degrees of those nodes and their
// neighbours.
func partGraphs(g *graph.Graph, k int) []PartGraph {
	out := make([]PartGraph, k)
	for p := range out {
		pg := &graph.Graph{N: g.N, Offsets: make([]int64, g.N+1)}
		deg := make([]int32, g.N)
		known := func(v int32) {
			d := int32(g.Degree(int(v)))
			if !hasSelfLoop(g, v) {
				d++
			}
			deg[v] = d
		}
		for v := range g.N {
			if v%k == p {
				pg.Neighbors = append(pg.Neighbors, g.Adj(v)...)
				known(int32(v))
				for _, u := range g.Adj(v) {
					known(u)
				}
			}
			pg.Offsets[v+1] = int64(len(pg.Neighbors))
		}
		out[p] = PartGraph{Graph: pg, Degree: deg}
	}
	return out
}

// Workers that each hold their nodes' rows only, drawing each node at its
// owner, make the blocks of the whole graph's sampler for the same seeds.
func TestPartNeighborEqualsWholeGraph(t *testing.T) {
	g, _, _ := testGraph(t, 600, 8)
	for _, agg := range []Aggregation{GCN, Mean, Attention} {
		const k = 3
		cfg := testConfig(g, agg, 3, 40)
		fanouts := []int{4, 3, -1}
		whole := NewNeighbor(cfg, fanouts)
		var parts []*PartNeighbor
		for _, pg := range partGraphs(g, k) {
			s, err := NewPartNeighbor(pg, fanouts, 3, agg, cfg.Seed)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, s)
		}
		seeds := cfg.Train[5:45]
		for epoch := 1; epoch <= 2; epoch++ {
			var want, got Batch
			if err := whole.SampleSeeds(epoch, seeds, &want); err != nil {
				t.Fatal(err)
			}
			dst := seeds
			for l := 2; l >= 0; l-- {
				// Each owner draws its destinations; the rows are put
				// together in dst's order.
				var rows Rows
				rows.Start = []int64{0}
				for _, v := range dst {
					var r Rows
					if err := parts[int(v)%k].Draw(epoch, l, []int32{v}, &r); err != nil {
						t.Fatal(err)
					}
					rows.Pick = append(rows.Pick, r.Pick...)
					rows.Vals = append(rows.Vals, r.Vals...)
					rows.Self = append(rows.Self, r.Self...)
					rows.Start = append(rows.Start, int64(len(rows.Pick)))
				}
				if err := parts[0].SetLayer(&got, l, dst, &rows); err != nil {
					t.Fatal(err)
				}
				dst = got.Sources(l)
			}
			got.FinishSeeds(seeds)
			checkBatch(t, g, cfg.Train, &got)
			if batchString(&got) != batchString(&want) {
				t.Fatalf("aggregation %d, epoch %d: the workers' batch differs from the whole graph's", agg, epoch)
			}
		}
	}
}

// A node's neighbours do not depend on the batch that draws it.
func TestNeighborDrawIsKeyedByNode(t *testing.T) {
	g, _, _ := testGraph(t, 600, 8)
	cfg := testConfig(g, Mean, 1, 40)
	s := NewNeighbor(cfg, []int{3})
	var a, b Batch
	if err := s.SampleSeeds(1, []int32{3, 6, 9}, &a); err != nil {
		t.Fatal(err)
	}
	if err := s.SampleSeeds(1, []int32{12, 6}, &b); err != nil {
		t.Fatal(err)
	}
	row := func(bt *Batch, i int) []int32 {
		op := blockOperator(bt.Blocks[0])
		var out []int32
		for _, c := range op.Indices[op.Offsets[i]:op.Offsets[i+1]] {
			out = append(out, bt.Input[c])
		}
		return out
	}
	if got, want := row(&b, 1), row(&a, 1); len(want) == 0 || !equalInt32(got, want) {
		t.Fatalf("node 6 draws %v in one batch and %v in another", want, got)
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPartNeighborErrors(t *testing.T) {
	g, _, _ := testGraph(t, 100, 4)
	pg := partGraphs(g, 2)[0]
	if _, err := NewPartNeighbor(PartGraph{Graph: g}, []int{2}, 1, Mean, 1); err == nil {
		t.Fatal("no degrees accepted")
	}
	if _, err := NewPartNeighbor(pg, []int{2, 2}, 1, Mean, 1); err == nil {
		t.Fatal("two fanouts for one layer accepted")
	}
	s, err := NewPartNeighbor(pg, []int{2}, 1, Mean, 1)
	if err != nil {
		t.Fatal(err)
	}
	var r Rows
	if err := s.Draw(1, 0, []int32{int32(g.N)}, &r); err == nil {
		t.Fatal("a node outside the graph drawn")
	}
	var b Batch
	if err := s.SetLayer(&b, 0, []int32{0, 2}, &Rows{Start: []int64{0, 1}, Pick: []int32{1}, Vals: []float32{1}, Self: []float32{0}}); err == nil {
		t.Fatal("rows of one destination accepted for two")
	}
}

// Every sampler's form reads over parts, with its arguments checked as
// New checks them.
func TestParsePartSpec(t *testing.T) {
	if f, err := ParsePartSpec("neighbor:5,-1", 2); err != nil || f.Kind != "neighbor" || !equalInt32([]int32{int32(f.Sizes[0]), int32(f.Sizes[1])}, []int32{5, -1}) {
		t.Fatalf("neighbor:5,-1: %+v %v", f, err)
	}
	for spec, want := range map[string]PartSpec{
		"ladies:40,30:rownorm": {Kind: "ladies", Sizes: []int{40, 30}, RowNorm: true},
		"saint-rw:20:3":        {Kind: "saint-rw", Counts: []int{20, 3}, Coverage: DefaultCoverage},
		"saint-edge:50:7.5":    {Kind: "saint-edge", Counts: []int{50}, Coverage: 7.5},
		"cluster:8:2":          {Kind: "cluster", Clusters: 8, PerBatch: 2, Method: "multilevel"},
	} {
		got, err := ParsePartSpec(spec, 2)
		if err != nil || got.Kind != want.Kind || len(got.Sizes) != len(want.Sizes) || got.RowNorm != want.RowNorm ||
			len(got.Counts) != len(want.Counts) || got.Coverage != want.Coverage || got.Clusters != want.Clusters ||
			got.PerBatch != want.PerBatch || got.Method != want.Method {
			t.Errorf("%s: %+v %v, want %+v", spec, got, err, want)
		}
	}
	for _, spec := range []string{"neighbor:5", "fastgcn:0,3", "ladies:4,4:x", "saint-rw:20", "saint-node:0", "cluster:5:6", "cluster:4:2:nope", "full", "neighbour:5,5"} {
		_, err := ParsePartSpec(spec, 2)
		if se := (SpecError{}); !errors.As(err, &se) {
			t.Errorf("%s: %v, want a SpecError", spec, err)
		}
	}
}
