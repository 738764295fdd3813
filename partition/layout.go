package partition

import (
	"fmt"
	"slices"
	"sort"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// Part is what one worker of the partition-parallel trainer holds.
//
// Local column ids are positions in Owned for owned nodes and len(Owned)+i
// for Halo[i]. Halo lists the non-owned nodes that owned rows aggregate
// from, grouped by owning part in ascending part order and ascending by
// global id within a part, so a received block of rows lands contiguously.
type Part struct {
	ID int
	// Owned holds the part's nodes as global ids, ascending; local row i is
	// node Owned[i].
	Owned []int32
	// Halo holds the global ids of the halo nodes.
	Halo []int32
	// HaloStart has K+1 entries: the halo block owned by part q is
	// Halo[HaloStart[q]:HaloStart[q+1]] (empty for q == ID).
	HaloStart []int
	// Local is the part's adjacency: len(Owned) rows, len(Owned)+len(Halo)
	// columns, each row in the order of the global row.
	Local *tensor.CSR
	// Send[q] lists the local rows part q needs, in the order part q's halo
	// block for this part lists them (nil for q == ID).
	Send [][]int32
}

// HaloBlock returns the global ids of the halo nodes owned by part q.
func (p *Part) HaloBlock(q int) []int32 { return p.Halo[p.HaloStart[q]:p.HaloStart[q+1]] }

// Global maps a local column id to its global node id.
func (p *Part) Global(col int32) int32 {
	if int(col) < len(p.Owned) {
		return p.Owned[col]
	}
	return p.Halo[int(col)-len(p.Owned)]
}

// Layout is an assignment turned into per-part local graphs.
type Layout struct {
	N     int // nodes of the global graph
	K     int
	Parts []Part
}

// BuildLayout splits g by parts into k local graphs. Its memory is about the
// graph once more (the local CSRs) plus one int32 per node: no part ever
// materialises the global graph.
func BuildLayout(g *graph.Graph, parts []int32, k int) (*Layout, error) {
	if err := checkCSR(g); err != nil {
		return nil, err
	}
	if err := CheckAssignment(parts, g.N, k); err != nil {
		return nil, err
	}
	// Owned lists by counting sort, which keeps global ids ascending, and
	// every node's local id within its own part.
	count := make([]int, k+1)
	for _, p := range parts {
		count[p+1]++
	}
	for p := 0; p < k; p++ {
		count[p+1] += count[p]
	}
	ownedAll := make([]int32, g.N)
	local := make([]int32, g.N)
	fill := slices.Clone(count[:k])
	for v, p := range parts {
		local[v] = int32(fill[p] - count[p])
		ownedAll[fill[p]] = int32(v)
		fill[p]++
	}
	l := &Layout{N: g.N, K: k, Parts: make([]Part, k)}
	for p := range l.Parts {
		l.Parts[p] = Part{ID: p, Owned: ownedAll[count[p]:count[p+1]:count[p+1]]}
	}
	parallel.For(k, 1, &layoutTask{g: g, parts: parts, local: local, l: l})

	// Part p sends part q exactly q's halo block for p, as p's local rows.
	for p := range l.Parts {
		l.Parts[p].Send = make([][]int32, k)
	}
	for q := range l.Parts {
		for p := range l.Parts {
			if p == q {
				continue
			}
			block := l.Parts[q].HaloBlock(p)
			send := make([]int32, len(block))
			for i, u := range block {
				send[i] = local[u]
			}
			l.Parts[p].Send[q] = send
		}
	}
	return l, nil
}

type layoutTask struct {
	g     *graph.Graph
	parts []int32
	local []int32
	l     *Layout
}

func (t *layoutTask) Run(lo, hi int) {
	for p := lo; p < hi; p++ {
		t.buildPart(&t.l.Parts[p])
	}
}

func (t *layoutTask) buildPart(part *Part) {
	g, parts, k := t.g, t.parts, t.l.K
	self := int32(part.ID)
	var nnz int64
	var keys []uint64 // owner<<32 | global id, for every cut entry
	for _, v := range part.Owned {
		row := g.Adj(int(v))
		nnz += int64(len(row))
		for _, u := range row {
			if q := parts[u]; q != self {
				keys = append(keys, uint64(q)<<32|uint64(u))
			}
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	part.Halo = make([]int32, len(keys))
	part.HaloStart = make([]int, k+1)
	for i, key := range keys {
		part.Halo[i] = int32(uint32(key))
		part.HaloStart[key>>32+1]++
	}
	for q := 0; q < k; q++ {
		part.HaloStart[q+1] += part.HaloStart[q]
	}
	keys = nil

	owned := len(part.Owned)
	csr := &tensor.CSR{Rows: owned, Cols: owned + len(part.Halo), Offsets: make([]int64, owned+1), Indices: make([]int32, 0, nnz)}
	for i, v := range part.Owned {
		for _, u := range g.Adj(int(v)) {
			q := parts[u]
			if q == self {
				csr.Indices = append(csr.Indices, t.local[u])
				continue
			}
			block := part.HaloBlock(int(q))
			j := sort.Search(len(block), func(j int) bool { return block[j] >= u })
			csr.Indices = append(csr.Indices, int32(owned+part.HaloStart[q]+j))
		}
		csr.Offsets[i+1] = int64(len(csr.Indices))
	}
	part.Local = csr
}

// Graph rebuilds the global graph from the parts alone: the proof that the
// layout lost nothing.
func (l *Layout) Graph() (*graph.Graph, error) {
	deg := make([]int64, l.N+1)
	for p := range l.Parts {
		part := &l.Parts[p]
		if part.Local == nil || part.Local.Rows != len(part.Owned) {
			return nil, fmt.Errorf("partition: part %d: local graph does not match its %d owned nodes", p, len(part.Owned))
		}
		for i, v := range part.Owned {
			if v < 0 || int(v) >= l.N {
				return nil, fmt.Errorf("partition: part %d owns node %d, out of range [0,%d)", p, v, l.N)
			}
			deg[v+1] = part.Local.Offsets[i+1] - part.Local.Offsets[i]
		}
	}
	for v := 0; v < l.N; v++ {
		deg[v+1] += deg[v]
	}
	g := &graph.Graph{N: l.N, Offsets: deg, Neighbors: make([]int32, deg[l.N])}
	for p := range l.Parts {
		part := &l.Parts[p]
		for i, v := range part.Owned {
			cols := part.Local.Indices[part.Local.Offsets[i]:part.Local.Offsets[i+1]]
			dst := g.Neighbors[g.Offsets[v]:g.Offsets[v+1]]
			for j, c := range cols {
				if c < 0 || int(c) >= part.Local.Cols {
					return nil, fmt.Errorf("partition: part %d: local column %d out of range", p, c)
				}
				dst[j] = part.Global(c)
			}
		}
	}
	return g, nil
}

// Validate checks the layout's invariants: parts own disjoint nodes covering
// the graph, Owned and each halo block ascend, halo blocks name nodes their
// owner really owns, and every Send list matches the receiver's halo block.
func (l *Layout) Validate() error {
	owner := make([]int32, l.N)
	for i := range owner {
		owner[i] = -1
	}
	if len(l.Parts) != l.K {
		return fmt.Errorf("partition: layout has %d parts, want %d", len(l.Parts), l.K)
	}
	for p := range l.Parts {
		part := &l.Parts[p]
		if part.ID != p {
			return fmt.Errorf("partition: part %d has ID %d", p, part.ID)
		}
		for i, v := range part.Owned {
			if v < 0 || int(v) >= l.N || owner[v] != -1 {
				return fmt.Errorf("partition: part %d: owned node %d out of range or owned twice", p, v)
			}
			if i > 0 && part.Owned[i-1] >= v {
				return fmt.Errorf("partition: part %d: owned nodes not ascending at %d", p, i)
			}
			owner[v] = int32(p)
		}
	}
	for v, p := range owner {
		if p < 0 {
			return fmt.Errorf("partition: node %d is owned by no part", v)
		}
	}
	for q := range l.Parts {
		recv := &l.Parts[q]
		if len(recv.HaloStart) != l.K+1 || recv.HaloStart[l.K] != len(recv.Halo) {
			return fmt.Errorf("partition: part %d: halo offsets malformed", q)
		}
		for p := range l.Parts {
			block := recv.HaloBlock(p)
			if p == q {
				if len(block) != 0 {
					return fmt.Errorf("partition: part %d lists its own nodes as halo", q)
				}
				continue
			}
			send := l.Parts[p].Send[q]
			if len(send) != len(block) {
				return fmt.Errorf("partition: part %d sends %d rows to part %d, which expects %d", p, len(send), q, len(block))
			}
			for i, u := range block {
				if owner[u] != int32(p) || (i > 0 && block[i-1] >= u) {
					return fmt.Errorf("partition: part %d: halo block of part %d malformed at %d", q, p, i)
				}
				if r := send[i]; r < 0 || int(r) >= len(l.Parts[p].Owned) || l.Parts[p].Owned[r] != u {
					return fmt.Errorf("partition: part %d's send list to part %d disagrees with its halo at %d", p, q, i)
				}
			}
		}
	}
	return nil
}

// ColumnDegrees returns, for every local column of p (owned nodes, then
// halo nodes), the node's degree in g with a self loop (in A+I), which the
// GCN operator normalises by: a part that keeps them needs no global graph.
func (p *Part) ColumnDegrees(g *graph.Graph) []int32 {
	deg := make([]int32, p.Local.Cols)
	for c := range p.Local.Cols {
		v := p.Global(int32(c))
		d := int32(g.Degree(int(v)))
		if _, loop := slices.BinarySearch(g.Adj(int(v)), v); !loop {
			d++
		}
		deg[c] = d
	}
	return deg
}
