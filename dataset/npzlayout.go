package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

// ReadNPZDataset reads a dataset stored as an .npz archive in either of the
// two layouts graft knows, chosen by the arrays present:
//
//   - gnn-benchmark (Shchur et al. 2018; also what the PyG/DGL Amazon and
//     Coauthor exports use): adjacency and attributes as CSR arrays
//     adj_{data,indices,indptr,shape} and attr_{data,indices,indptr,shape}
//     (or a dense attr_matrix), labels, optional class_names. The adjacency
//     need not be symmetric; it is symmetrised.
//   - heterophilous-graphs (Platonov et al. 2023, e.g. Tolokers):
//     node_features (N, F), node_labels (N,), edges (E, 2) and
//     {train,val,test}_masks (K, N), giving K fixed splits.
//   - scipy.sparse.save_npz (format, shape, data, indices/indptr or
//     row/col): a square adjacency matrix alone, a structure-only graph.
func ReadNPZDataset(name, path string) (*Dataset, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), ".npz")
	}
	return ParseNPZDataset(name, path, b)
}

// ParseNPZDataset is ReadNPZDataset on the archive's bytes; path labels
// errors. The arrays' shapes are checked against one layout and one graph
// from their headers before any large array is inflated, and arrays the
// layout does not use are never inflated.
func ParseNPZDataset(name, path string, b []byte) (*Dataset, error) {
	z, err := parseNPZ(path, b, checkNPZLayout)
	if err != nil {
		return nil, err
	}
	return npzDataset(name, z)
}

// maxFixedSplits bounds the splits one file may ship (Tolokers has 10), so a
// corrupt shape cannot make the reader loop for hours.
const maxFixedSplits = 1000

func npzDataset(name string, z *NPZ) (*Dataset, error) {
	var d *Dataset
	var err error
	switch {
	case z.Has("adj_indptr"):
		d, err = gnnBenchmark(name, z)
	case z.Has("edges") && z.Has("node_features"):
		d, err = heterophilous(name, z)
	case isScipySparse(z):
		d, err = scipyGraph(name, z)
	default:
		return nil, unknownLayout(z)
	}
	if err != nil {
		return nil, err
	}
	if d.NumNodes() == 0 {
		return nil, fmt.Errorf("%s: the graph has no nodes", z.Path)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", z.Path, err)
	}
	return d, nil
}

// npzCSR reads the scipy CSR arrays <prefix>_{indptr,indices,data,shape}.
// A missing _data means all ones.
func npzCSR(z *NPZ, prefix string) (*tensor.CSR, error) {
	get := func(suffix string) ([]int64, error) {
		a, err := z.Get(prefix + suffix)
		if err != nil {
			return nil, err
		}
		v, err := a.Int64s()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", z.Path, err)
		}
		return v, nil
	}
	shape, err := get("_shape")
	if err != nil {
		return nil, err
	}
	if len(shape) != 2 || shape[0] < 0 || shape[1] < 0 || shape[0] >= 1<<31 || shape[1] >= 1<<31 {
		return nil, fmt.Errorf("%s: array %s_shape is %v, want two non-negative dimensions below 2^31", z.Path, prefix, shape)
	}
	indptr, err := get("_indptr")
	if err != nil {
		return nil, err
	}
	rows, cols := int(shape[0]), int(shape[1])
	if len(indptr) != rows+1 {
		return nil, fmt.Errorf("%s: array %s_indptr has %d entries for %d rows, want %d", z.Path, prefix, len(indptr), rows, rows+1)
	}
	idxArr, err := z.Get(prefix + "_indices")
	if err != nil {
		return nil, err
	}
	indices, err := idxArr.Int32s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.Path, err)
	}
	m := &tensor.CSR{Rows: rows, Cols: cols, Offsets: indptr, Indices: indices}
	if a, ok := z.Arrays[prefix+"_data"]; ok {
		if m.Values, err = a.Float32s(); err != nil {
			return nil, fmt.Errorf("%s: %w", z.Path, err)
		}
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: arrays %s_*: %w", z.Path, prefix, err)
	}
	if err := checkFinite(m.Values, 0); err != nil {
		return nil, fmt.Errorf("%s: array %s_data: %w", z.Path, prefix, err)
	}
	return m, nil
}

func gnnBenchmark(name string, z *NPZ) (*Dataset, error) {
	adj, err := npzCSR(z, "adj")
	if err != nil {
		return nil, err
	}
	if adj.Rows != adj.Cols {
		return nil, fmt.Errorf("%s: adjacency is %d×%d, want square", z.Path, adj.Rows, adj.Cols)
	}
	n := adj.Rows
	g, err := graphFromCSR(z.Path, adj)
	if err != nil {
		return nil, err
	}
	d := &Dataset{Name: name, Graph: g}

	switch {
	case z.Has("attr_indptr"):
		if d.Sparse, err = npzCSR(z, "attr"); err != nil {
			return nil, err
		}
		if d.Sparse.Rows != n {
			return nil, fmt.Errorf("%s: attributes have %d rows for %d nodes", z.Path, d.Sparse.Rows, n)
		}
		if allOnes(d.Sparse.Values) {
			d.Sparse.Values = nil
		}
	case z.Has("attr_matrix"):
		if d.Dense, err = npzMatrix(z, "attr_matrix", n); err != nil {
			return nil, err
		}
	}

	a, err := z.Get("labels")
	if err != nil {
		return nil, err
	}
	if len(a.Shape) != 1 {
		return nil, fmt.Errorf("%s: array labels has shape %v; want (N,) (one-hot labels are not supported)", z.Path, a.Shape)
	}
	raw, err := a.Int64s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.Path, err)
	}
	if len(raw) != n {
		return nil, fmt.Errorf("%s: array labels has %d entries for %d nodes", z.Path, len(raw), n)
	}
	if d.Labels, d.NumClasses, err = labelsFromInts(z.Path+": array labels", raw, true); err != nil {
		return nil, err
	}
	d.ClassNames = numberedClasses(d.NumClasses)
	if a, ok := z.Arrays["class_names"]; ok {
		names, err := a.Strings()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", z.Path, err)
		}
		if len(names) < d.NumClasses {
			return nil, fmt.Errorf("%s: array class_names has %d names but labels go up to %d", z.Path, len(names), d.NumClasses-1)
		}
		d.ClassNames, d.NumClasses = names, len(names)
	}
	return d, nil
}

// graphFromCSR builds the dataset convention's graph from a square
// adjacency matrix whose nonzero entries are edges.
func graphFromCSR(path string, adj *tensor.CSR) (*graph.Graph, error) {
	src := make([]int32, 0, adj.NNZ())
	dst := make([]int32, 0, adj.NNZ())
	for i := 0; i < adj.Rows; i++ {
		for p := adj.Offsets[i]; p < adj.Offsets[i+1]; p++ {
			if adj.Value(p) == 0 {
				continue // an explicitly stored zero is not an edge
			}
			src = append(src, int32(i))
			dst = append(dst, adj.Indices[p])
		}
	}
	g, err := undirected(adj.Rows, src, dst)
	if err != nil {
		return nil, fmt.Errorf("%s: adjacency: %w", path, err)
	}
	return g, nil
}

// npzMatrix reads a 2-D float array with n rows as a dense matrix.
func npzMatrix(z *NPZ, name string, n int) (*tensor.Matrix, error) {
	a, err := z.Get(name)
	if err != nil {
		return nil, err
	}
	if len(a.Shape) != 2 || a.Shape[0] != n {
		return nil, fmt.Errorf("%s: array %s has shape %v, want (%d, F)", z.Path, name, a.Shape, n)
	}
	data, err := a.Float32s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.Path, err)
	}
	if err := checkFinite(data, a.Shape[1]); err != nil {
		return nil, fmt.Errorf("%s: array %s: %w", z.Path, name, err)
	}
	return tensor.FromSlice(a.Shape[0], a.Shape[1], data), nil
}

func heterophilous(name string, z *NPZ) (*Dataset, error) {
	fa, err := z.Get("node_features")
	if err != nil {
		return nil, err
	}
	if len(fa.Shape) != 2 {
		return nil, fmt.Errorf("%s: array node_features has shape %v, want (N, F)", z.Path, fa.Shape)
	}
	n := fa.Shape[0]
	x, err := npzMatrix(z, "node_features", n)
	if err != nil {
		return nil, err
	}
	la, err := z.Get("node_labels")
	if err != nil {
		return nil, err
	}
	raw, err := la.Int64s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.Path, err)
	}
	if len(la.Shape) != 1 || len(raw) != n {
		return nil, fmt.Errorf("%s: array node_labels has shape %v for %d nodes, want (%d,)", z.Path, la.Shape, n, n)
	}
	labels, k, err := labelsFromInts(z.Path+": array node_labels", raw, false)
	if err != nil {
		return nil, err
	}
	ea, err := z.Get("edges")
	if err != nil {
		return nil, err
	}
	if len(ea.Shape) != 2 || ea.Shape[1] != 2 {
		return nil, fmt.Errorf("%s: array edges has shape %v, want (E, 2)", z.Path, ea.Shape)
	}
	flat, err := ea.Int64s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.Path, err)
	}
	m := ea.Shape[0]
	src, dst := make([]int32, m), make([]int32, m)
	for i := 0; i < m; i++ {
		s, t := flat[2*i], flat[2*i+1]
		if s < 0 || s >= int64(n) || t < 0 || t >= int64(n) {
			return nil, fmt.Errorf("%s: array edges: edge %d (%d, %d) has a node id outside [0, %d)", z.Path, i, s, t, n)
		}
		src[i], dst[i] = int32(s), int32(t)
	}
	g, err := undirected(n, src, dst)
	if err != nil {
		return nil, fmt.Errorf("%s: array edges: %w", z.Path, err)
	}
	d := &Dataset{Name: name, Graph: g, Dense: x, Labels: labels, NumClasses: k, ClassNames: numberedClasses(k)}
	masks := z.Arrays["train_masks"]
	if masks == nil {
		masks = z.Arrays["train_mask"]
	}
	if masks == nil {
		return d, nil
	}
	// 2-D masks hold one split per row; 1-D masks are the one split.
	rows, twoD := 1, len(masks.Shape) == 2
	if twoD {
		rows = masks.Shape[0]
	}
	if rows > maxFixedSplits {
		return nil, fmt.Errorf("%s: array %s holds %d splits; at most %d are supported", z.Path, masks.Name, rows, maxFixedSplits)
	}
	for k := 0; k < rows; k++ {
		splitName := "public"
		if k > 0 {
			splitName = fmt.Sprintf("public:%d", k)
		}
		row := -1
		if twoD {
			row = k
		}
		s, err := masksSplit(z, splitName, row, d)
		if err != nil {
			return nil, err
		}
		d.Splits = append(d.Splits, s)
	}
	return d, nil
}

// layoutArrays are the arrays each layout reads.
var layoutArrays = map[string][]string{
	"gnn-benchmark": {"adj_data", "adj_indices", "adj_indptr", "adj_shape", "attr_data", "attr_indices", "attr_indptr",
		"attr_shape", "attr_matrix", "labels", "class_names"},
	"heterophilous": append([]string{"node_features", "node_labels", "edges"}, maskArrays...),
}

// maskArrays are the arrays a split's masks may be stored in.
var maskArrays = []string{"train_masks", "val_masks", "test_masks", "train_mask", "val_mask", "test_mask"}

// maxClassNamesBytes bounds the class names an archive may hold.
const maxClassNamesBytes = 1 << 24

// checkNPZLayout checks, from the headers and the small arrays alone, that
// the arrays fit one layout and one graph: every array's shape agrees with
// the node count, and no count exceeds what the graph can use. It drops the
// arrays the layout does not read, so that they are never inflated.
func checkNPZLayout(z *NPZ) error {
	c := headerCheck{z: z}
	switch {
	case z.Has("adj_indptr"):
		c.benchmark()
		c.keep(layoutArrays["gnn-benchmark"])
	case z.Has("edges") && z.Has("node_features"):
		c.heterophilous()
		c.keep(layoutArrays["heterophilous"])
	case isScipySparse(z):
		return checkScipyLayout(z)
	default:
		// Refused from the headers: inflating arrays no layout reads would
		// let a small archive take memory for nothing.
		return unknownLayout(z)
	}
	return c.err
}

// unknownLayout names the arrays of an archive in none of the layouts.
func unknownLayout(z *NPZ) error {
	return fmt.Errorf("%s: unknown .npz layout (arrays: %s); want gnn-benchmark (adj_*, attr_*, labels), heterophilous-graphs (node_features, node_labels, edges, *_masks) or a scipy.sparse.save_npz adjacency matrix (format, shape, data, indices, indptr)",
		z.Path, strings.Join(z.Names(), ", "))
}

// headerCheck collects the first disagreement among an archive's shapes.
type headerCheck struct {
	z   *NPZ
	err error
}

// shape returns the named array's shape, or nil if it is absent.
func (c *headerCheck) shape(name string) []int {
	if a := c.z.Arrays[name]; a != nil {
		return a.Shape
	}
	return nil
}

// want checks that the named array, if present, has the given shape (a
// dimension of -1 takes any size); why says where the sizes come from.
func (c *headerCheck) want(name string, why string, dims ...int) {
	got := c.shape(name)
	if c.err != nil || got == nil {
		return
	}
	ok := len(got) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = dims[i] < 0 || got[i] == dims[i]
	}
	if !ok {
		want := make([]string, len(dims))
		for i, d := range dims {
			want[i] = fmt.Sprint(d)
			if d < 0 {
				want[i] = "·"
			}
		}
		c.err = fmt.Errorf("%s: array %s has shape %s, want %s for %s", c.z.Path, name, tuple(got), tuple(want), why)
	}
}

// atMost checks that the named array, if present, has at most limit
// elements.
func (c *headerCheck) atMost(name string, limit int64, why string) {
	if a := c.z.Arrays[name]; c.err == nil && a != nil && int64(a.Len()) > limit {
		c.err = fmt.Errorf("%s: array %s has shape %s, more than the %d entries %s", c.z.Path, name, tuple(a.Shape), limit, why)
	}
}

// backed checks a dimension that no array's length backs, as backedShape
// does a save_npz matrix's.
func (c *headerCheck) backed(name, what string, dim int64, entries int) {
	if c.err == nil && dim > int64(entries)+isolatedNodes {
		c.err = fmt.Errorf("%s: array %s declares %d %s for %d entries; at most %d %s without an entry are supported", c.z.Path, name, dim, what, entries, isolatedNodes, what)
	}
}

// dims reads a small (2,) shape array such as adj_shape; ok is false if it
// is absent or unreadable (the layout reader then says why).
func (c *headerCheck) dims(name string) (rows, cols int64, ok bool) {
	a := c.z.Arrays[name]
	if a == nil || !a.loaded || a.Len() != 2 {
		return 0, 0, false
	}
	v, err := a.Int64s()
	if err != nil || v[0] < 0 || v[1] < 0 || v[0] >= 1<<31 || v[1] >= 1<<31 {
		return 0, 0, false
	}
	return v[0], v[1], true
}

func (c *headerCheck) benchmark() {
	ptr := c.shape("adj_indptr")
	if len(ptr) != 1 || ptr[0] < 1 {
		return // npzCSR says why
	}
	n := ptr[0] - 1
	nodes := fmt.Sprintf("%d nodes (adj_indptr)", n)
	c.want("adj_shape", "a matrix's shape", 2)
	c.want("adj_indices", "the adjacency's entries", -1)
	c.want("labels", nodes+"; one-hot labels are not supported", n)
	c.want("attr_indptr", nodes, n+1)
	c.want("attr_shape", "a matrix's shape", 2)
	c.want("attr_indices", "the attributes' entries", -1)
	c.want("attr_matrix", nodes, n, -1)
	c.atMost("adj_indices", int64(n)*int64(n), fmt.Sprintf("a %d×%d adjacency can hold", n, n))
	if c.err == nil && c.shape("adj_indices") != nil {
		c.want("adj_data", "one per entry of adj_indices", c.shape("adj_indices")[0])
	}
	if _, cols, ok := c.dims("attr_shape"); ok {
		c.atMost("attr_indices", int64(n)*cols, fmt.Sprintf("%d nodes of %d attributes can hold", n, cols))
		if idx := c.shape("attr_indices"); len(idx) == 1 {
			c.backed("attr_shape", "columns", cols, idx[0])
		}
	}
	if c.err == nil && c.shape("attr_indices") != nil {
		c.want("attr_data", "one per entry of attr_indices", c.shape("attr_indices")[0])
	}
	if a := c.z.Arrays["class_names"]; c.err == nil && a != nil && int64(a.Len())*int64(a.dtype().itemsize) > maxClassNamesBytes {
		c.err = fmt.Errorf("%s: array class_names (%s of %s) holds more than %d bytes of names", c.z.Path, tuple(a.Shape), a.DType, maxClassNamesBytes)
	}
}

func (c *headerCheck) heterophilous() {
	x := c.shape("node_features")
	if len(x) != 2 {
		return // heterophilous says why
	}
	n := x[0]
	nodes := fmt.Sprintf("%d nodes (node_features)", n)
	c.want("node_labels", nodes, n)
	c.want("edges", "a list of edges", -1, 2)
	c.atMost("edges", 2*int64(n)*int64(n), fmt.Sprintf("%d nodes can have", n))
	c.masks(n)
}

// masks bounds the split masks by n nodes: at most maxFixedSplits splits
// (masksSplit checks their exact shapes once read).
func (c *headerCheck) masks(n int) {
	for _, name := range maskArrays {
		c.atMost(name, int64(maxFixedSplits)*int64(max(n, 1)), fmt.Sprintf("%d splits of %d nodes take", maxFixedSplits, n))
	}
}

// keep drops the arrays not in names.
func (c *headerCheck) keep(names []string) {
	for name := range c.z.Arrays {
		if !slices.Contains(names, name) {
			delete(c.z.Arrays, name)
		}
	}
}

// tuple formats a shape as numpy prints it: (3,) or (2, 5).
func tuple[T int | string](shape []T) string {
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = fmt.Sprint(d)
	}
	if len(s) == 1 {
		return "(" + s[0] + ",)"
	}
	return "(" + strings.Join(s, ", ") + ")"
}
