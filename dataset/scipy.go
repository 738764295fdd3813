package dataset

import (
	"fmt"
	"os"

	"github.com/graft-gnn/graft/tensor"
)

// scipy.sparse.save_npz writes a matrix as the arrays "format" (a 0-d
// bytes scalar: b'csr', b'csc' or b'coo'; also accepted as unicode),
// "shape" (2,), "data", and "indices" with "indptr" (csr, csc) or "row"
// with "col" (coo).

// isScipySparse reports whether an archive holds a save_npz matrix.
func isScipySparse(z *NPZ) bool {
	return z.Has("format") && z.Has("shape") && (z.Has("indptr") || z.Has("row"))
}

// ReadScipySparse reads a matrix that scipy.sparse.save_npz wrote (csr,
// csc or coo) as CSR. Duplicate entries of a coo matrix are kept, and add
// up wherever the matrix is used as features.
func ReadScipySparse(path string) (*tensor.CSR, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	z, err := parseNPZ(path, b, checkScipyLayout)
	if err != nil {
		return nil, err
	}
	if !isScipySparse(z) {
		return nil, fmt.Errorf("%s: not a scipy.sparse.save_npz matrix (arrays: %v); want format, shape, data and indices/indptr or row/col", path, z.Names())
	}
	return scipyCSR(z)
}

// scipyFormat reads the archive's "format" scalar.
func scipyFormat(z *NPZ) (string, error) {
	a := z.Arrays["format"]
	if a == nil || len(a.Shape) != 0 || !a.loaded {
		return "", fmt.Errorf("%s: array format is not a scalar string", z.Path)
	}
	s, err := a.Strings()
	if err != nil {
		return "", fmt.Errorf("%s: %w", z.Path, err)
	}
	switch s[0] {
	case "csr", "csc", "coo":
		return s[0], nil
	}
	return "", fmt.Errorf("%s: sparse format %q is not supported; save the matrix as csr, csc or coo", z.Path, s[0])
}

// scipyShape reads the archive's "shape".
func scipyShape(z *NPZ) (rows, cols int64, err error) {
	a := z.Arrays["shape"]
	if a == nil || len(a.Shape) != 1 || a.Shape[0] != 2 || !a.loaded {
		return 0, 0, fmt.Errorf("%s: array shape is not two dimensions (2-D matrices only)", z.Path)
	}
	v, err := a.Int64s()
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", z.Path, err)
	}
	if v[0] < 0 || v[1] < 0 || v[0] >= 1<<31 || v[1] >= 1<<31 {
		return 0, 0, fmt.Errorf("%s: array shape is %v, want two non-negative dimensions below 2^31", z.Path, v)
	}
	return v[0], v[1], nil
}

// checkScipyLayout checks a save_npz archive's array shapes from their
// headers, before anything large is inflated, and drops other arrays.
func checkScipyLayout(z *NPZ) error {
	if !isScipySparse(z) {
		return nil // the caller says what is missing
	}
	format, err := scipyFormat(z)
	if err != nil {
		return err
	}
	rows, cols, err := scipyShape(z)
	if err != nil {
		return err
	}
	c := headerCheck{z: z}
	c.want("data", "a list of entries", -1)
	nnz := -1
	if s := c.shape("data"); len(s) == 1 {
		nnz = s[0]
	}
	switch format {
	case "csr":
		c.want("indptr", fmt.Sprintf("a csr matrix of %d rows", rows), int(rows)+1)
		c.want("indices", "one per entry of data", nnz)
	case "csc":
		c.want("indptr", fmt.Sprintf("a csc matrix of %d columns", cols), int(cols)+1)
		c.want("indices", "one per entry of data", nnz)
	case "coo":
		c.want("row", "one per entry of data", nnz)
		c.want("col", "one per entry of data", nnz)
	}
	if c.err == nil && nnz >= 0 {
		c.err = backedShape(z.Path, format, rows, cols, nnz)
	}
	c.atMost("data", rows*cols, fmt.Sprintf("a %d×%d matrix can hold", rows, cols))
	c.keep([]string{"format", "shape", "data", "indices", "indptr", "row", "col"})
	return c.err
}

// backedShape checks the dimensions of a save_npz matrix of entries
// entries that no array's length backs (a coo matrix's rows and columns, a
// csr matrix's columns, a csc matrix's rows): like an edge list's node
// count, each may exceed the entries by at most isolatedNodes. A tiny
// archive declaring 2^31 rows would otherwise take 16 GiB of row offsets
// (coo, or a csc matrix's transpose), and 2^31 feature columns a model as
// wide.
func backedShape(path, format string, rows, cols int64, entries int) error {
	dims := []struct {
		what string
		n    int64
	}{{"rows", rows}, {"columns", cols}}
	switch format {
	case "csr":
		dims = dims[1:]
	case "csc":
		dims = dims[:1]
	}
	for _, d := range dims {
		if d.n > int64(entries)+isolatedNodes {
			return fmt.Errorf("%s: array shape declares %d %s for %d entries; at most %d %s without an entry are supported", path, d.n, d.what, entries, isolatedNodes, d.what)
		}
	}
	return nil
}

// scipyCSR converts a checked save_npz archive to CSR.
func scipyCSR(z *NPZ) (*tensor.CSR, error) {
	format, err := scipyFormat(z)
	if err != nil {
		return nil, err
	}
	rows, cols, err := scipyShape(z)
	if err != nil {
		return nil, err
	}
	ints := func(name string) ([]int32, error) {
		a, err := z.Get(name)
		if err != nil {
			return nil, err
		}
		v, err := a.Int32s()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", z.Path, err)
		}
		return v, nil
	}
	da, err := z.Get("data")
	if err != nil {
		return nil, err
	}
	values, err := da.Float32s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.Path, err)
	}
	if err := backedShape(z.Path, format, rows, cols, len(values)); err != nil {
		return nil, err
	}
	if err := checkFinite(values, 0); err != nil {
		return nil, fmt.Errorf("%s: array data: %w", z.Path, err)
	}
	var m *tensor.CSR
	switch format {
	case "csr", "csc":
		outer, inner := rows, cols
		if format == "csc" {
			outer, inner = cols, rows
		}
		ptrArr, err := z.Get("indptr")
		if err != nil {
			return nil, err
		}
		ptr, err := ptrArr.Int64s()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", z.Path, err)
		}
		idx, err := ints("indices")
		if err != nil {
			return nil, err
		}
		m = &tensor.CSR{Rows: int(outer), Cols: int(inner), Offsets: ptr, Indices: idx, Values: values}
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %s arrays: %w", z.Path, format, err)
		}
		if format == "csc" {
			m = transposeCSR(m)
		}
	case "coo":
		r, err := ints("row")
		if err != nil {
			return nil, err
		}
		c, err := ints("col")
		if err != nil {
			return nil, err
		}
		if m, err = cooToCSR(int(rows), int(cols), r, c, values); err != nil {
			return nil, fmt.Errorf("%s: %w", z.Path, err)
		}
	}
	return m, nil
}

// transposeCSR returns the transpose of a (so a csc matrix read as the CSR
// of its transpose becomes the CSR of itself); entries keep their order
// within each new row.
func transposeCSR(a *tensor.CSR) *tensor.CSR {
	nnz := a.NNZ()
	t := &tensor.CSR{Rows: a.Cols, Cols: a.Rows, Offsets: make([]int64, a.Cols+1), Indices: make([]int32, nnz)}
	if a.Values != nil {
		t.Values = make([]float32, nnz)
	}
	for _, c := range a.Indices {
		t.Offsets[c+1]++
	}
	for i := range a.Cols {
		t.Offsets[i+1] += t.Offsets[i]
	}
	next := append([]int64(nil), t.Offsets[:a.Cols]...)
	for r := range a.Rows {
		for p := a.Offsets[r]; p < a.Offsets[r+1]; p++ {
			c := a.Indices[p]
			q := next[c]
			next[c]++
			t.Indices[q] = int32(r)
			if a.Values != nil {
				t.Values[q] = a.Values[p]
			}
		}
	}
	return t
}

// cooToCSR sorts coordinate entries into CSR by row, stably.
func cooToCSR(rows, cols int, r, c []int32, values []float32) (*tensor.CSR, error) {
	m := &tensor.CSR{Rows: rows, Cols: cols, Offsets: make([]int64, rows+1), Indices: make([]int32, len(r)), Values: make([]float32, len(r))}
	for p, i := range r {
		if i < 0 || int(i) >= rows || c[p] < 0 || int(c[p]) >= cols {
			return nil, fmt.Errorf("coo entry %d at (%d, %d) is outside the %d×%d matrix", p, i, c[p], rows, cols)
		}
		m.Offsets[i+1]++
	}
	for i := range rows {
		m.Offsets[i+1] += m.Offsets[i]
	}
	next := append([]int64(nil), m.Offsets[:rows]...)
	for p, i := range r {
		q := next[i]
		next[i]++
		m.Indices[q], m.Values[q] = c[p], values[p]
	}
	return m, nil
}

// scipyGraph reads a save_npz matrix as a structure-only dataset: a square
// adjacency matrix whose nonzero entries are edges, symmetrised.
func scipyGraph(name string, z *NPZ) (*Dataset, error) {
	adj, err := scipyCSR(z)
	if err != nil {
		return nil, err
	}
	if adj.Rows != adj.Cols {
		return nil, fmt.Errorf("%s: a %d×%d matrix is not an adjacency matrix (want square); a features matrix is given as a feature file", z.Path, adj.Rows, adj.Cols)
	}
	g, err := graphFromCSR(z.Path, adj)
	if err != nil {
		return nil, err
	}
	return &Dataset{Name: name, Graph: g}, nil
}
