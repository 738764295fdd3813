package dataset

import (
	"reflect"
	"strings"
	"testing"
)

// scipyNPZ builds the archive scipy.sparse.save_npz writes (deflated, as
// savez_compressed does): the format as a 0-d |S3 bytes scalar, the shape
// as <i8, and the format's index arrays.
func scipyNPZ(format string, rows, cols int64, data []float64, arrays map[string][]int32) []byte {
	members := []member{
		{"format", npyBytes("|S3", false, []int{}, []byte(format))},
		{"shape", npyBytes("<i8", false, []int{2}, le([]int64{rows, cols}))},
		{"data", npyBytes("<f8", false, []int{len(data)}, le(data))},
	}
	for _, name := range []string{"indices", "indptr", "row", "col"} {
		if v, ok := arrays[name]; ok {
			members = append(members, member{name, npyBytes("<i4", false, []int{len(v)}, le(v))})
		}
	}
	return npzBytes(true, members...)
}

// The 3×4 matrix [[1 0 2 0] [0 0 0 3] [4 5 0 0]] in each format.
var scipyFixtures = map[string][]byte{
	"csr": scipyNPZ("csr", 3, 4, []float64{1, 2, 3, 4, 5}, map[string][]int32{"indptr": {0, 2, 3, 5}, "indices": {0, 2, 3, 0, 1}}),
	"csc": scipyNPZ("csc", 3, 4, []float64{1, 4, 5, 2, 3}, map[string][]int32{"indptr": {0, 2, 3, 4, 5}, "indices": {0, 2, 2, 0, 1}}),
	"coo": scipyNPZ("coo", 3, 4, []float64{4, 1, 3, 2, 5}, map[string][]int32{"row": {2, 0, 1, 0, 2}, "col": {0, 0, 3, 2, 1}}),
}

func TestReadScipySparse(t *testing.T) {
	want := []float32{1, 0, 2, 0, 0, 0, 0, 3, 4, 5, 0, 0}
	for format, b := range scipyFixtures {
		t.Run(format, func(t *testing.T) {
			m, err := ReadScipySparse(writeFile(t, t.TempDir(), "x.npz", b))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			d := &Dataset{Sparse: m}
			if got := d.DenseFeatures(); got.Rows != 3 || got.Cols != 4 || !reflect.DeepEqual(got.Data, want) {
				t.Errorf("%s: got %v %v, want 3×4 %v", format, got.Shape(), got.Data, want)
			}
		})
	}
}

func TestScipySparseAsGraphAndFeatures(t *testing.T) {
	dir := t.TempDir()
	// A unicode format string (<U3) is read like the bytes one.
	adj := npzBytes(true,
		member{"format", npyBytes("<U3", false, []int{}, unicode(3, "csr"))},
		member{"shape", npyBytes("<i8", false, []int{2}, le([]int64{3, 3}))},
		member{"data", npyBytes("<f4", false, []int{3}, le([]float32{1, 1, 0}))},
		member{"indices", npyBytes("<i4", false, []int{3}, le([]int32{1, 2, 0}))},
		member{"indptr", npyBytes("<i8", false, []int{4}, le([]int64{0, 1, 2, 3}))},
	)
	d, err := LoadPath(writeFile(t, dir, "adj.npz", adj))
	if err != nil {
		t.Fatal(err)
	}
	// 0→1 and 1→2; the stored zero 2→0 is no edge.
	if d.Name != "adj" || d.NumNodes() != 3 || d.NumUndirectedEdges() != 2 || d.Labels != nil {
		t.Fatalf("%s: %d nodes, %d edges", d.Name, d.NumNodes(), d.NumUndirectedEdges())
	}
	err = d.AddFiles(NodeFiles{
		Features: writeFile(t, dir, "x.npz", scipyFixtures["csc"]),
		Labels:   writeFile(t, dir, "y.csv", []byte("0,1\n1,0\n2,1\n")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Sparse == nil || d.NumFeatures() != 4 || d.NumClasses != 2 {
		t.Errorf("features %d (sparse %v), classes %d", d.NumFeatures(), d.Sparse != nil, d.NumClasses)
	}
}

func TestScipySparseErrors(t *testing.T) {
	tests := []struct {
		name    string
		b       []byte
		wantErr string
	}{
		{"bsr", scipyNPZ("bsr", 3, 4, []float64{1}, map[string][]int32{"indptr": {0, 1, 1, 1}, "indices": {0}}),
			`sparse format "bsr" is not supported`},
		{"short indptr", scipyNPZ("csr", 3, 4, []float64{1}, map[string][]int32{"indptr": {0, 1}, "indices": {0}}),
			"array indptr has shape (2,), want (4,) for a csr matrix of 3 rows"},
		{"column out of range", scipyNPZ("csr", 3, 4, []float64{1}, map[string][]int32{"indptr": {0, 1, 1, 1}, "indices": {9}}),
			"column id 9 at position 0 out of range"},
		{"coo outside", scipyNPZ("coo", 3, 4, []float64{1}, map[string][]int32{"row": {3}, "col": {0}}),
			"coo entry 0 at (3, 0) is outside the 3×4 matrix"},
		{"more entries than cells", scipyNPZ("coo", 1, 1, []float64{1, 1}, map[string][]int32{"row": {0, 0}, "col": {0, 0}}),
			"more than the 1 entries a 1×1 matrix can hold"},
		{"not square", scipyFixtures["csr"], "a 3×4 matrix is not an adjacency matrix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadPath(writeFile(t, t.TempDir(), "m.npz", tc.b))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "m.npz") {
				t.Fatalf("err = %v, want one naming m.npz and containing %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzScipySparse mutates the arrays of a save_npz archive (format, shape
// and the two index arrays) rather than its zip bytes.
func FuzzScipySparse(f *testing.F) {
	i32 := func(v ...int32) []byte { return npyBytes("<i4", false, []int{len(v)}, le(v)) }
	f.Add([]byte("csr"), npyBytes("<i8", false, []int{2}, le([]int64{3, 4})), i32(0, 2, 3, 5), i32(0, 2, 3, 0, 1))
	f.Add([]byte("coo"), npyBytes("<i8", false, []int{2}, le([]int64{3, 3})), i32(2, 0, 1, 0, 2), i32(0, 0, 2, 2, 1))
	f.Add([]byte("csc"), npyBytes("<i8", false, []int{2}, le([]int64{1 << 30, 1 << 30})), i32(0, 5), i32(0, 2, 3, 0, 1))
	f.Fuzz(func(t *testing.T, format, shape, a, b []byte) {
		names := [2]string{"indptr", "indices"}
		if string(format) == "coo" {
			names = [2]string{"row", "col"}
		}
		archive := npzBytes(false,
			member{"format", npyBytes("|S3", false, []int{}, append(format, 0, 0, 0)[:3])},
			member{"shape", shape},
			member{"data", npyBytes("<f4", false, []int{5}, le([]float32{1, 2, 3, 4, 5}))},
			member{names[0], a}, member{names[1], b})
		z, err := parseNPZ("fuzz.npz", archive, checkScipyLayout)
		if err != nil || !isScipySparse(z) {
			return
		}
		if m, err := scipyCSR(z); err == nil {
			if err := m.Validate(); err != nil {
				t.Fatalf("reader returned an invalid matrix: %v", err)
			}
		}
	})
}
