package partition

import (
	"fmt"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
)

// PartStats describes one part of an assignment.
type PartStats struct {
	Nodes int64 `json:"nodes"`
	// Edges counts the stored adjacency entries of the part's nodes: the
	// nonzeros of its local CSR.
	Edges int64 `json:"edges"`
	// CutEdges counts the entries that lead to another part.
	CutEdges   int64 `json:"cut_edges"`
	TrainNodes int64 `json:"train_nodes"`
	// BoundaryNodes own at least one neighbour in another part.
	BoundaryNodes int64 `json:"boundary_nodes"`
	// HaloNodes are the distinct nodes of other parts adjacent to this
	// part: the rows it receives each layer.
	HaloNodes int64 `json:"halo_nodes"`
	// SendRows is the rows this part sends each layer, summed over the
	// receiving parts.
	SendRows int64 `json:"send_rows"`
}

// Imbalances gives max/mean over the parts of each per-part quantity (1
// when every part has zero).
type Imbalances struct {
	Nodes    float64 `json:"nodes"`
	Edges    float64 `json:"edges"`
	Train    float64 `json:"train_nodes"`
	Boundary float64 `json:"boundary_nodes"`
	Halo     float64 `json:"halo_nodes"`
	SendRows float64 `json:"send_rows"`
}

// Report is the quality of one assignment of an undirected graph.
type Report struct {
	K     int   `json:"k"`
	Nodes int   `json:"nodes"`
	Edges int64 `json:"edges"` // undirected edges, self loops excluded
	// EdgeCut counts each undirected edge between parts once, as METIS does.
	EdgeCut         int64   `json:"edge_cut"`
	EdgeCutFraction float64 `json:"edge_cut_fraction"`
	// Imbalance is the node-count imbalance, max/mean.
	Imbalance     float64    `json:"imbalance"`
	Imbalances    Imbalances `json:"imbalances"`
	BoundaryNodes int64      `json:"boundary_nodes"`
	// CommRows is the rows one layer's halo exchange moves between all
	// parts: the sum of Comm.
	CommRows   int64       `json:"comm_rows"`
	EmptyParts int         `json:"empty_parts"`
	Parts      []PartStats `json:"parts"`
	// Comm[p][q] is the number of rows part p sends to part q per layer.
	Comm [][]int64 `json:"comm_rows_matrix"`
}

// Evaluate measures an assignment of g's nodes to k parts. train, if
// non-nil, marks the training nodes. The graph must store both directions of
// every edge; self loops are never cut.
func Evaluate(g *graph.Graph, parts []int32, k int, train []bool) (*Report, error) {
	if err := checkCSR(g); err != nil {
		return nil, err
	}
	if err := CheckAssignment(parts, g.N, k); err != nil {
		return nil, err
	}
	if train != nil && len(train) != g.N {
		return nil, fmt.Errorf("partition: %d training flags for %d nodes", len(train), g.N)
	}
	// Count per chunk, then sum: each chunk owns its counters so workers
	// never share a cache line, and a K-sized stamp array dedupes the parts
	// a node is sent to.
	chunks := min(4*parallel.Workers(), max(1, g.N/4096))
	bounds := make([]int, chunks+1)
	for c := range bounds {
		bounds[c] = int(int64(g.N) * int64(c) / int64(chunks))
	}
	t := &evalTask{g: g, parts: parts, train: train, k: k, bounds: bounds, acc: make([]evalAcc, chunks)}
	parallel.ForBounds(bounds, t)

	r := &Report{K: k, Nodes: g.N, Parts: make([]PartStats, k), Comm: make([][]int64, k)}
	flat := make([]int64, k*k)
	for p := range r.Comm {
		r.Comm[p] = flat[p*k : (p+1)*k]
	}
	var stored, selfLoops, cutEntries int64
	for _, a := range t.acc {
		stored += a.stored
		selfLoops += a.selfLoops
		cutEntries += a.cutEntries
		for p := range r.Parts {
			s, x := &r.Parts[p], &a.parts[p]
			s.Nodes += x.Nodes
			s.Edges += x.Edges
			s.CutEdges += x.CutEdges
			s.TrainNodes += x.TrainNodes
			s.BoundaryNodes += x.BoundaryNodes
		}
		for i, c := range a.comm {
			flat[i] += c
		}
	}
	r.Edges = (stored - selfLoops) / 2
	r.EdgeCut = cutEntries / 2
	if r.Edges > 0 {
		r.EdgeCutFraction = float64(r.EdgeCut) / float64(r.Edges)
	}
	for p := 0; p < k; p++ {
		for q := 0; q < k; q++ {
			r.Parts[p].SendRows += r.Comm[p][q]
			r.Parts[q].HaloNodes += r.Comm[p][q]
		}
	}
	for p := range r.Parts {
		s := &r.Parts[p]
		r.BoundaryNodes += s.BoundaryNodes
		r.CommRows += s.SendRows
		if s.Nodes == 0 {
			r.EmptyParts++
		}
	}
	stat := func(f func(PartStats) int64) float64 {
		vals := make([]int64, k)
		for p, s := range r.Parts {
			vals[p] = f(s)
		}
		return imbalance(vals)
	}
	r.Imbalances = Imbalances{
		Nodes:    stat(func(s PartStats) int64 { return s.Nodes }),
		Edges:    stat(func(s PartStats) int64 { return s.Edges }),
		Train:    stat(func(s PartStats) int64 { return s.TrainNodes }),
		Boundary: stat(func(s PartStats) int64 { return s.BoundaryNodes }),
		Halo:     stat(func(s PartStats) int64 { return s.HaloNodes }),
		SendRows: stat(func(s PartStats) int64 { return s.SendRows }),
	}
	r.Imbalance = r.Imbalances.Nodes
	return r, nil
}

// imbalance is max/mean, 1 when the total is zero.
func imbalance(vals []int64) float64 {
	var sum, mx int64
	for _, v := range vals {
		sum += v
		mx = max(mx, v)
	}
	if sum == 0 {
		return 1
	}
	return float64(mx) * float64(len(vals)) / float64(sum)
}

type evalAcc struct {
	parts                         []PartStats
	comm                          []int64
	stored, selfLoops, cutEntries int64
}

type evalTask struct {
	g      *graph.Graph
	parts  []int32
	train  []bool
	k      int
	bounds []int
	acc    []evalAcc
}

func (t *evalTask) Run(lo, hi int) {
	c := searchBounds(t.bounds, lo)
	k := t.k
	a := evalAcc{parts: make([]PartStats, k), comm: make([]int64, k*k)}
	stamp := make([]int32, k) // stamp[q] == v+1: node v already counted as sent to q
	g, parts := t.g, t.parts
	for v := lo; v < hi; v++ {
		p := parts[v]
		s := &a.parts[p]
		s.Nodes++
		if t.train != nil && t.train[v] {
			s.TrainNodes++
		}
		row := g.Adj(v)
		s.Edges += int64(len(row))
		a.stored += int64(len(row))
		boundary := false
		for _, u := range row {
			if int(u) == v {
				a.selfLoops++
				continue
			}
			q := parts[u]
			if q == p {
				continue
			}
			s.CutEdges++
			a.cutEntries++
			boundary = true
			if stamp[q] != int32(v)+1 {
				stamp[q] = int32(v) + 1
				a.comm[int(p)*k+int(q)]++
			}
		}
		if boundary {
			s.BoundaryNodes++
		}
	}
	t.acc[c] = a
}
