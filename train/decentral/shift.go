package decentral

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/graph"
)

// Shift is a graph shift operator S on a fixed undirected topology: S_ii =
// Diag[i] and S_ij = Off[e] for the e-th stored edge (i, j) of Graph, so
// row i is exactly what node i knows about its neighbourhood. S need not be
// symmetric (a wireless interference matrix is not).
type Shift struct {
	Graph *graph.Graph
	Diag  []float64
	Off   []float64
}

// row returns node i's diagonal entry and its off-diagonal entries in
// neighbour order.
func (s *Shift) row(i int) (float64, []float64) {
	g := s.Graph
	return s.Diag[i], s.Off[g.Offsets[i]:g.Offsets[i+1]]
}

// apply returns S x for x holding one width-wide row per node.
func (s *Shift) apply(x []float64, width int) []float64 {
	g := s.Graph
	out := make([]float64, len(x))
	for i := range g.N {
		d, off := s.row(i)
		o := out[i*width : (i+1)*width]
		axpy(o, d, x[i*width:(i+1)*width])
		for k, j := range g.Adj(i) {
			axpy(o, off[k], x[int(j)*width:(int(j)+1)*width])
		}
	}
	return out
}

// applyTranspose returns Sᵀ u.
func (s *Shift) applyTranspose(u []float64, width int) []float64 {
	g := s.Graph
	out := make([]float64, len(u))
	for i := range g.N {
		d, off := s.row(i)
		ui := u[i*width : (i+1)*width]
		axpy(out[i*width:(i+1)*width], d, ui)
		for k, j := range g.Adj(i) {
			axpy(out[int(j)*width:(int(j)+1)*width], off[k], ui)
		}
	}
	return out
}

// axpy adds a·x to y.
func axpy(y []float64, a float64, x []float64) {
	for i, v := range x {
		y[i] += a * v
	}
}

// checkTopology reports a graph that cannot carry agents: directed edges
// without their reverse, or self loops (the diagonal lives in Diag).
func checkTopology(g *graph.Graph) error {
	if g == nil || g.N == 0 {
		return fmt.Errorf("decentral: empty network")
	}
	for i := range g.N {
		for _, j := range g.Adj(i) {
			if int(j) == i {
				return fmt.Errorf("decentral: node %d has a self loop; the shift's diagonal holds self weights", i)
			}
			if !g.HasEdge(j, int32(i)) {
				return fmt.Errorf("decentral: edge %d→%d has no reverse; agents need two-way links", i, j)
			}
		}
	}
	return nil
}

// NormalizedLaplacian returns S = I − D^{-1/2} A D^{-1/2}, the authors' shift
// operator. An isolated node gets S_ii = 1. Each node needs its neighbours'
// degrees, which it learns once when the network forms.
func NormalizedLaplacian(g *graph.Graph) (*Shift, error) {
	if err := checkTopology(g); err != nil {
		return nil, err
	}
	s := &Shift{Graph: g, Diag: make([]float64, g.N), Off: make([]float64, g.NumEdges())}
	for i := range g.N {
		s.Diag[i] = 1
		di := float64(g.Degree(i))
		for e := g.Offsets[i]; e < g.Offsets[i+1]; e++ {
			dj := float64(g.Degree(int(g.Neighbors[e])))
			s.Off[e] = -1 / math.Sqrt(di*dj)
		}
	}
	return s, nil
}

// MetropolisHastings returns the consensus weights c_ij = 1/max(d_i, d_j)
// for neighbours, with degrees counting the self loop, and c_ii = 1 − Σ_j
// c_ij, as a Shift (Diag holds c_ii). The matrix is symmetric and doubly
// stochastic, so repeated mixing converges to the average on a connected
// graph.
func MetropolisHastings(g *graph.Graph) (*Shift, error) {
	if err := checkTopology(g); err != nil {
		return nil, err
	}
	c := &Shift{Graph: g, Diag: make([]float64, g.N), Off: make([]float64, g.NumEdges())}
	for i := range g.N {
		di := g.Degree(i) + 1
		sum := 0.0
		for e := g.Offsets[i]; e < g.Offsets[i+1]; e++ {
			dj := g.Degree(int(g.Neighbors[e])) + 1
			c.Off[e] = 1 / float64(max(di, dj))
			sum += c.Off[e]
		}
		c.Diag[i] = 1 - sum
	}
	return c, nil
}
