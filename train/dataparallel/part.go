package dataparallel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
)

// Sites under which the workers' traffic is counted: the sampled structure
// (requests of destinations and the neighbours drawn for them), the input
// features (requests of rows and the rows), evaluation's rows, and the
// one-off exchanges before the first epoch (who owns which node and the
// training counts, and the samplers' own: FastGCN's column norms, LADIES's
// degrees, GraphSAINT's drawers and pre-sampling, Cluster-GCN's cluster
// sizes), which the first epoch's metrics report as the setup's bytes.
const (
	StructureSite = "sample.structure"
	FeatureSite   = "sample.features"
	EvalSite      = "eval.rows"
	SetupSite     = "sample.setup"
)

// share is what one worker holds: its part of the graph, its nodes'
// features and labels, and who owns every node.
type share struct {
	c          comm.Communicator
	rank, size int
	n          int     // nodes of the whole graph
	owned      []int32 // ascending global ids
	owner      []int32 // per node of the graph, its worker
	pg         sample.PartGraph
	x          rowStore // the owned nodes' features, dense, a row each
	labels     []int32  // per owned node
	// The split's nodes this worker owns, in global ids.
	train, val, test []int32
	trainCounts      []int // per worker: its training nodes
}

// newShare returns the share of the worker holding sp, exchanging with
// the others who owns what and how many training nodes each has.
func newShare(c comm.Communicator, sp *partstore.Part) (*share, error) {
	p := &sp.Part
	if k := len(p.HaloStart) - 1; k != c.Size() || p.ID != c.Rank() {
		return nil, fmt.Errorf("dataparallel: rank %d of %d holds part %d of %d", c.Rank(), c.Size(), p.ID, k)
	}
	if p.Local == nil || p.Local.Rows != len(p.Owned) || len(sp.ColDegree) != p.Local.Cols || len(sp.Labels) != len(p.Owned) {
		return nil, errors.New("dataparallel: the part's structure, degrees and labels do not match its nodes")
	}
	if sp.Features.Rows() != len(p.Owned) {
		return nil, fmt.Errorf("dataparallel: %d feature rows for %d owned nodes", sp.Features.Rows(), len(p.Owned))
	}
	s := &share{c: c, rank: c.Rank(), size: c.Size(), n: sp.Nodes, owned: p.Owned, labels: sp.Labels}
	g := &graph.Graph{N: sp.Nodes, Offsets: make([]int64, sp.Nodes+1), Neighbors: make([]int32, 0, len(p.Local.Indices))}
	deg := make([]int32, sp.Nodes)
	for i, v := range p.Owned {
		if v < 0 || int(v) >= sp.Nodes || (i > 0 && v <= p.Owned[i-1]) {
			return nil, fmt.Errorf("dataparallel: the part's nodes are not ascending ids of the graph's %d", sp.Nodes)
		}
	}
	for col, d := range sp.ColDegree {
		deg[p.Global(int32(col))] = d
	}
	// Rows of the owned nodes in global ids, the others empty; a local row
	// keeps the global row's order, so its ids stay ascending.
	next := 0
	for v := range sp.Nodes {
		if next < len(p.Owned) && int(p.Owned[next]) == v {
			for _, col := range p.Local.Indices[p.Local.Offsets[next]:p.Local.Offsets[next+1]] {
				g.Neighbors = append(g.Neighbors, p.Global(col))
			}
			next++
		}
		g.Offsets[v+1] = int64(len(g.Neighbors))
	}
	s.pg = sample.PartGraph{Graph: g, Degree: deg}
	switch x := sp.Features; {
	case x.Dense != nil:
		s.x = rowStore{f32: x.Dense}
	case x.BF16 != nil:
		s.x = rowStore{b16: x.BF16}
	case x.Sparse != nil:
		s.x = rowStore{csr: x.Sparse}
	default:
		return nil, errors.New("dataparallel: the part has no features")
	}
	global := func(rows []int32) []int32 {
		out := make([]int32, len(rows))
		for i, r := range rows {
			out[i] = p.Owned[r]
		}
		return out
	}
	s.train, s.val, s.test = global(sp.Train), global(sp.Val), global(sp.Test)
	return s, s.exchangeOwners(sp.Layout)
}

// exchangeOwners tells every worker this one's layout, training count and
// nodes, and fills in owner and trainCounts from what the others tell.
func (s *share) exchangeOwners(layout uint64) error {
	mine := binary.LittleEndian.AppendUint64(nil, layout)
	mine = binary.LittleEndian.AppendUint32(mine, uint32(len(s.train)))
	mine = appendInt32s(mine, s.owned)
	send, recv := make([][]byte, s.size), make([][]byte, s.size)
	for q := range send {
		send[q] = mine
	}
	if err := s.c.AllToAll(SetupSite, send, recv); err != nil {
		return fmt.Errorf("dataparallel: exchanging the parts' nodes: %w", err)
	}
	s.owner = make([]int32, s.n)
	for v := range s.owner {
		s.owner[v] = -1
	}
	s.trainCounts = make([]int, s.size)
	for q, b := range recv {
		if len(b) < 12 || (len(b)-12)%4 != 0 {
			return fmt.Errorf("dataparallel: rank %d sent %d bytes of nodes", q, len(b))
		}
		if binary.LittleEndian.Uint64(b) != layout {
			return fmt.Errorf("dataparallel: rank %d holds a part of a different partition than rank %d (layout fingerprints differ)", q, s.rank)
		}
		s.trainCounts[q] = int(binary.LittleEndian.Uint32(b[8:]))
		ids, err := readInt32s(nil, b[12:])
		if err != nil {
			return err
		}
		for _, v := range ids {
			if v < 0 || int(v) >= s.n || s.owner[v] != -1 {
				return fmt.Errorf("dataparallel: rank %d claims node %d, outside the graph or owned twice", q, v)
			}
			s.owner[v] = int32(q)
		}
	}
	for v, q := range s.owner {
		if q < 0 {
			return fmt.Errorf("dataparallel: node %d belongs to no part", v)
		}
	}
	if slices.Max(s.trainCounts) == 0 {
		return errors.New("dataparallel: no worker has training nodes")
	}
	return nil
}

// row returns the local row of node v, which this worker owns.
func (s *share) row(v int32) int {
	i, _ := slices.BinarySearch(s.owned, v)
	return i
}

func appendInt32s(b []byte, xs []int32) []byte {
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func readInt32s(dst []int32, b []byte) ([]int32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("dataparallel: %d bytes are not whole int32s", len(b))
	}
	for i := 0; i < len(b); i += 4 {
		dst = append(dst, int32(binary.LittleEndian.Uint32(b[i:])))
	}
	return dst, nil
}

// columnSums returns, per node this worker owns, the sum over the workers
// of their partial (a value per node of the graph, each worker's own
// share), added in rank order: each worker sends the owners its nonzero
// values of their nodes.
func (s *share) columnSums(partial []float64) ([]float64, error) {
	if len(partial) != s.n {
		return nil, fmt.Errorf("dataparallel: %d partial sums for %d nodes", len(partial), s.n)
	}
	send, recv := make([][]byte, s.size), make([][]byte, s.size)
	for v, x := range partial {
		if q := s.owner[v]; x != 0 && int(q) != s.rank {
			send[q] = binary.LittleEndian.AppendUint32(send[q], uint32(v))
			send[q] = binary.LittleEndian.AppendUint64(send[q], math.Float64bits(x))
		}
	}
	if err := s.c.AllToAll(SetupSite, send, recv); err != nil {
		return nil, fmt.Errorf("dataparallel: exchanging column sums: %w", err)
	}
	out := make([]float64, len(s.owned))
	for q, b := range recv {
		if q == s.rank {
			for i, v := range s.owned {
				out[i] += partial[v]
			}
			continue
		}
		if len(b)%12 != 0 {
			return nil, fmt.Errorf("dataparallel: rank %d sent %d bytes of column sums", q, len(b))
		}
		for i := 0; i < len(b); i += 12 {
			v := int32(binary.LittleEndian.Uint32(b[i:]))
			if v < 0 || int(v) >= s.n || s.owner[v] != int32(s.rank) {
				return nil, fmt.Errorf("dataparallel: rank %d sent a column sum of node %d, which rank %d does not own", q, v, s.rank)
			}
			out[s.row(v)] += math.Float64frombits(binary.LittleEndian.Uint64(b[i+4:]))
		}
	}
	return out, nil
}

// allGather returns, per node of the graph, the value its owner gave in
// own (a value per node it owns).
func (s *share) allGather(own []float64) ([]float64, error) {
	if len(own) != len(s.owned) {
		return nil, fmt.Errorf("dataparallel: %d values for %d nodes", len(own), len(s.owned))
	}
	send, recv := make([][]byte, s.size), make([][]byte, s.size)
	mine := make([]byte, 0, 8*len(own))
	for _, x := range own {
		mine = binary.LittleEndian.AppendUint64(mine, math.Float64bits(x))
	}
	for q := range send {
		send[q] = mine
	}
	if err := s.c.AllToAll(SetupSite, send, recv); err != nil {
		return nil, fmt.Errorf("dataparallel: exchanging the nodes' values: %w", err)
	}
	out := make([]float64, s.n)
	next := make([]int, s.size) // per worker, its next value
	for v, q := range s.owner {
		b := recv[q]
		if 8*next[q]+8 > len(b) {
			return nil, fmt.Errorf("dataparallel: rank %d sent %d bytes of values for more nodes", q, len(b))
		}
		out[v] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*next[q]:]))
		next[q]++
	}
	return out, nil
}
