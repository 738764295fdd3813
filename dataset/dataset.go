package dataset

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/tensor"
)

// Unlabelled is the label of a node whose class is unknown: a CiteSeer id
// that appears only in .cites, an OGB node with a missing label, or any node
// of a structure-only graph. Splits never contain such nodes.
const Unlabelled = -1

// Dataset is a node-classification graph with features, labels and the splits
// its source ships.
//
// Graph is always undirected in the sense GNN papers use: every edge of the
// source is stored in both directions, duplicates are removed and self loops
// are dropped (models that want them add them explicitly, e.g. GCN's Â = A+I).
// So Graph.NumEdges() counts directed entries, twice the undirected edges.
type Dataset struct {
	Name  string
	Graph *graph.Graph

	// Features holds the node features as read: exactly one of Dense and
	// Sparse is non-nil, or neither for a structure-only graph. Bag-of-words
	// sources (LINQS .content, gnn-benchmark attr_*) stay sparse; use
	// DenseFeatures for a dense copy.
	Dense  *tensor.Matrix
	Sparse *tensor.CSR
	// DenseBF16 holds the features of a mapped bfloat16 file (Dense and
	// Sparse are then nil): only mini-batch training reads them.
	DenseBF16 *tensor.MatrixBF16
	// Mapped, when set, is the feature file mapped into memory, of which
	// Dense (float32) or DenseBF16 is a view: read-only, and read from
	// the page cache as it is used.
	Mapped *FeatureMap

	Labels     []int32  // class of each node, or Unlabelled; nil if the source has none
	NumClasses int      // labels lie in [0, NumClasses)
	ClassNames []string // len NumClasses; "0", "1", … where the source names none

	// Splits are the fixed splits shipped with the source, in order; the
	// first, if any, is named "public". Tolokers has ten ("public",
	// "public:1" … "public:9"); Cora and CiteSeer from a data directory also
	// get the ten Geom-GCN splits ("geom-gcn:0" … "geom-gcn:9").
	Splits []Split

	// MaskOrder, if non-nil, maps position i of an external mask file to the
	// node it describes. Cora and CiteSeer are ordered as their LINQS
	// .content files, while Planetoid and Geom-GCN files use Planetoid's
	// order; MaskOrder lets "file:" splits index the right nodes.
	MaskOrder []int32

	// NodeIDs, if non-nil, is the source's id of each node: readers that
	// renumber ids (an edge list with string or sparse integer ids) keep
	// them here so that results can name nodes as the source does. Nil
	// means node i is id i (see NodeID and NodeIndex).
	NodeIDs []string
	idIndex map[string]int32 // NodeIDs inverted, built on first use

	// EdgeListHeader is the first line of an edge list (up to 80 bytes)
	// when it was read as a header naming the columns rather than as an
	// edge, so that a loader can say so; empty otherwise.
	EdgeListHeader string
	// EdgeList is the edge list file the graph was read from, if it was,
	// for errors about ids that are no node to say how to add one.
	EdgeList string
}

// NumNodes is the number of nodes.
func (d *Dataset) NumNodes() int { return d.Graph.N }

// NumUndirectedEdges is the number of undirected edges (stored entries / 2).
func (d *Dataset) NumUndirectedEdges() int64 { return d.Graph.NumEdges() / 2 }

// NumFeatures is the feature width, 0 for a structure-only graph.
func (d *Dataset) NumFeatures() int {
	switch {
	case d.Dense != nil:
		return d.Dense.Cols
	case d.Sparse != nil:
		return d.Sparse.Cols
	case d.DenseBF16 != nil:
		return d.DenseBF16.Cols
	}
	return 0
}

// FeatureNonzeros counts the nonzero feature values.
func (d *Dataset) FeatureNonzeros() int64 {
	switch {
	case d.Sparse != nil:
		var nz int64
		for p := range d.Sparse.Indices {
			if d.Sparse.Value(int64(p)) != 0 {
				nz++
			}
		}
		return nz
	case d.Dense != nil:
		var nz int64
		for _, v := range d.Dense.Data {
			if v != 0 {
				nz++
			}
		}
		return nz
	case d.DenseBF16 != nil:
		var nz int64
		for _, v := range d.DenseBF16.Data {
			if v&0x7fff != 0 {
				nz++
			}
		}
		return nz
	}
	return 0
}

// DenseFeatures returns the features as a dense N×F matrix: Dense itself if
// the features are dense (shared, not copied), otherwise a new matrix filled
// from Sparse. A structure-only dataset gives an N×0 matrix.
func (d *Dataset) DenseFeatures() *tensor.Matrix {
	if d.Dense != nil {
		return d.Dense
	}
	if x := d.DenseBF16; x != nil {
		m := tensor.New(x.Rows, x.Cols)
		tensor.FromBF16(m.Data, x.Data)
		return m
	}
	if d.Sparse == nil {
		return tensor.New(d.NumNodes(), 0)
	}
	s := d.Sparse
	m := tensor.New(s.Rows, s.Cols)
	for i := 0; i < s.Rows; i++ {
		row := m.Row(i)
		for p := s.Offsets[i]; p < s.Offsets[i+1]; p++ {
			row[s.Indices[p]] += s.Value(p)
		}
	}
	return m
}

// ClassCounts returns the number of nodes in each class.
func (d *Dataset) ClassCounts() []int {
	counts := make([]int, d.NumClasses)
	for _, y := range d.Labels {
		if y >= 0 {
			counts[y]++
		}
	}
	return counts
}

// Validate checks every invariant the rest of graft relies on: shapes agree,
// labels are in range, features are finite and splits are disjoint lists of
// labelled nodes. Readers call it before returning.
func (d *Dataset) Validate() error {
	if d.Graph == nil {
		return fmt.Errorf("dataset %s: no graph", d.Name)
	}
	if err := d.Graph.Validate(); err != nil {
		return fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	n := d.Graph.N
	if (d.Dense != nil) && (d.Sparse != nil || d.DenseBF16 != nil) || d.Sparse != nil && d.DenseBF16 != nil {
		return fmt.Errorf("dataset %s: features set in more than one storage", d.Name)
	}
	if x := d.DenseBF16; x != nil && (x.Rows != n || len(x.Data) != x.Rows*x.Cols) {
		return fmt.Errorf("dataset %s: bfloat16 features are %d×%d for %d nodes", d.Name, x.Rows, x.Cols, n)
	}
	if d.Dense != nil {
		if d.Dense.Rows != n || len(d.Dense.Data) != d.Dense.Rows*d.Dense.Cols {
			return fmt.Errorf("dataset %s: dense features are %s for %d nodes", d.Name, d.Dense.Shape(), n)
		}
		// A mapped file's values were checked as it was mapped, through
		// a buffer: reading them here would fault in the whole file.
		if d.Mapped == nil {
			if err := checkFinite(d.Dense.Data, d.Dense.Cols); err != nil {
				return fmt.Errorf("dataset %s: features: %w", d.Name, err)
			}
		}
	}
	if d.Sparse != nil {
		if d.Sparse.Rows != n {
			return fmt.Errorf("dataset %s: sparse features have %d rows for %d nodes", d.Name, d.Sparse.Rows, n)
		}
		if err := d.Sparse.Validate(); err != nil {
			return fmt.Errorf("dataset %s: features: %w", d.Name, err)
		}
		if err := checkFinite(d.Sparse.Values, 0); err != nil {
			return fmt.Errorf("dataset %s: features: %w", d.Name, err)
		}
	}
	if d.Labels != nil {
		if len(d.Labels) != n {
			return fmt.Errorf("dataset %s: %d labels for %d nodes", d.Name, len(d.Labels), n)
		}
		for v, y := range d.Labels {
			if y < Unlabelled || int(y) >= d.NumClasses {
				return fmt.Errorf("dataset %s: node %d has label %d outside [0, %d)", d.Name, v, y, d.NumClasses)
			}
		}
	}
	if len(d.ClassNames) != d.NumClasses {
		return fmt.Errorf("dataset %s: %d class names for %d classes", d.Name, len(d.ClassNames), d.NumClasses)
	}
	if d.MaskOrder != nil && len(d.MaskOrder) != n {
		return fmt.Errorf("dataset %s: mask order has %d entries for %d nodes", d.Name, len(d.MaskOrder), n)
	}
	if d.NodeIDs != nil && len(d.NodeIDs) != n {
		return fmt.Errorf("dataset %s: %d node ids for %d nodes", d.Name, len(d.NodeIDs), n)
	}
	for _, s := range d.Splits {
		if err := s.check(d); err != nil {
			return fmt.Errorf("dataset %s: %w", d.Name, err)
		}
	}
	return nil
}

// checkFinite reports the first NaN or infinity; cols > 0 lets the error give
// a row and column instead of a flat position.
func checkFinite(x []float32, cols int) error { return checkFiniteAt(x, cols, 0) }

// checkFiniteAt is checkFinite of a part of a matrix whose first value is
// the matrix's value number first.
func checkFiniteAt(x []float32, cols, first int) error {
	for j, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			i := first + j
			if cols > 0 {
				return fmt.Errorf("value %v at row %d, column %d", v, i/cols, i%cols)
			}
			return fmt.Errorf("value %v at stored entry %d", v, i)
		}
	}
	return nil
}

// undirected builds the dataset convention's graph from directed edges:
// symmetrised, deduplicated, self loops dropped.
func undirected(n int, src, dst []int32) (*graph.Graph, error) {
	return graph.FromEdges(n, src, dst, graph.BuildOptions{Symmetrize: true, SelfLoops: graph.DropSelfLoops})
}

// numberedClasses names classes "0" … "k-1" for sources without names.
func numberedClasses(k int) []string {
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprint(i)
	}
	return names
}

// labelsFromInts converts raw class ids, requiring them in [0, k) or, when
// allowMissing, -1 for unknown; it returns the labels and k = max+1.
func labelsFromInts(where string, raw []int64, allowMissing bool) ([]int32, int, error) {
	labels := make([]int32, len(raw))
	k := 0
	for i, y := range raw {
		switch {
		case y == -1 && allowMissing:
		case y < 0 || y > math.MaxInt16:
			return nil, 0, fmt.Errorf("%s: node %d has label %d, want a class id in [0, %d]", where, i, y, math.MaxInt16)
		default:
			k = max(k, int(y)+1)
		}
		labels[i] = int32(y)
	}
	return labels, k, nil
}

// useHugePages moves d's adjacency and features in memory to huge pages
// (hugepage.Collapse): training reads them at random, a sampled batch's
// rows and a layer's neighbours, and on 4 KiB pages most of those reads
// also miss the TLB. A mapped feature file stays as it is.
func (d *Dataset) useHugePages() {
	if g := d.Graph; g != nil {
		hugepage.Collapse(g.Offsets)
		hugepage.Collapse(g.Neighbors)
	}
	if d.Mapped != nil {
		return
	}
	if d.Dense != nil {
		hugepage.Collapse(d.Dense.Data)
	}
	if a := d.Sparse; a != nil {
		hugepage.Collapse(a.Offsets)
		hugepage.Collapse(a.Indices)
		hugepage.Collapse(a.Values)
	}
}
