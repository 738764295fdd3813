package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

func onesMatrix(rows, cols int) *tensor.Matrix {
	m := tensor.New(rows, cols)
	for i := range m.Data {
		m.Data[i] = 1
	}
	return m
}

func TestDropoutDeterminismAndRate(t *testing.T) {
	const rows, cols, p = 300, 50, 0.4
	g := &Block{NumDst: rows, NumSrc: rows}
	x := onesMatrix(rows, cols)
	run := func(seed, step, site uint64) []float32 {
		d := Dropout{P: p, Site: site}
		return d.Forward(g, DenseFeatures(x), Mode{Train: true, Seed: seed, Step: step}).Dense.Clone().Data
	}
	base := run(1, 2, 3)
	zeros := 0
	for i, v := range base {
		switch v {
		case 0:
			zeros++
		case float32(1 / (1 - p)):
		default:
			t.Fatalf("element %d = %v, want 0 or 1/(1-p)", i, v)
		}
	}
	if rate := float64(zeros) / float64(len(base)); math.Abs(rate-p) > 0.02 {
		t.Errorf("dropped %.3f of the elements, want about %v", rate, p)
	}
	same := func(a, b []float32) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if !same(base, run(1, 2, 3)) {
		t.Error("same seed, step and site gave different masks")
	}
	for _, other := range [][]float32{run(2, 2, 3), run(1, 3, 3), run(1, 2, 4)} {
		if same(base, other) {
			t.Error("a different seed, step or site gave the same mask")
		}
	}
	var d Dropout = Dropout{P: p}
	if y := d.Forward(g, DenseFeatures(x), Mode{Train: false}); y.Dense != x {
		t.Error("dropout changed its input outside training")
	}
}

// TestDropoutPartitionIndependent drops rows of a "whole" matrix and the
// same rows held by a worker in another order under their global ids.
func TestDropoutPartitionIndependent(t *testing.T) {
	const rows, cols = 20, 16
	rng := rand.New(rand.NewPCG(1, 2))
	x := randomMatrix(rows, cols, rng)
	mode := Mode{Train: true, Seed: 5, Step: 7}
	whole := Dropout{P: 0.5, Site: 1}
	all := whole.Forward(&Block{NumDst: rows, NumSrc: rows}, DenseFeatures(x), mode).Dense

	ids := []int32{17, 3, 9, 0, 12}
	part := Dropout{P: 0.5, Site: 1}
	local := &Block{NumDst: len(ids), NumSrc: len(ids), SrcIDs: ids}
	got := part.Forward(local, DenseFeatures(selectRows(x, ids)), mode).Dense
	sparse := Dropout{P: 0.5, Site: 1}
	gotSparse := sparse.Forward(local, NewFeatures(selectRows(x, ids), ForceSparse), mode).Sparse.Dense()
	for i, id := range ids {
		for c := 0; c < cols; c++ {
			if got.At(i, c) != all.At(int(id), c) {
				t.Fatalf("row %d col %d: partitioned %v, whole %v", id, c, got.At(i, c), all.At(int(id), c))
			}
			if gotSparse.At(i, c) != all.At(int(id), c) {
				t.Fatalf("row %d col %d: sparse %v, dense %v", id, c, gotSparse.At(i, c), all.At(int(id), c))
			}
		}
	}
}

func TestFeatureStorage(t *testing.T) {
	sparse := tensor.New(10, 10)
	sparse.Data[3], sparse.Data[57] = 1, 2
	dense := onesMatrix(4, 4)
	for _, tc := range []struct {
		name string
		x    *tensor.Matrix
		mode Storage
		want bool
	}{
		{"auto sparse", sparse, Auto, true},
		{"auto dense", dense, Auto, false},
		{"forced dense", sparse, ForceDense, false},
		{"forced sparse", dense, ForceSparse, true},
	} {
		f := NewFeatures(tc.x, tc.mode)
		if f.IsSparse() != tc.want {
			t.Errorf("%s: sparse = %v", tc.name, f.IsSparse())
		}
		if f.Rows() != tc.x.Rows || f.Cols() != tc.x.Cols {
			t.Errorf("%s: shape %d×%d", tc.name, f.Rows(), f.Cols())
		}
	}
	if f := NewSparseFeatures(denseToCSR(sparse), Auto); !f.IsSparse() {
		t.Error("sparse CSR features were densified")
	}
	if _, err := ParseStorage("compressed"); err == nil {
		t.Error("ParseStorage accepted an unknown mode")
	}
}

func TestRowNormalize(t *testing.T) {
	x := tensor.FromSlice(3, 3, []float32{1, 1, 2, 0, 0, 0, 0, 3, 1})
	a := denseToCSR(x)
	RowNormalize(x)
	RowNormalizeCSR(a)
	want := []float32{0.25, 0.25, 0.5, 0, 0, 0, 0, 0.75, 0.25}
	for i, w := range want {
		if x.Data[i] != w || a.Dense().Data[i] != w {
			t.Fatalf("element %d: dense %v, sparse %v, want %v", i, x.Data[i], a.Dense().Data[i], w)
		}
	}
}
