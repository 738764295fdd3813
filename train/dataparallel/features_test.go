package dataparallel

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// randomCSR is a rows×cols CSR of about density, with values unless ones.
func randomCSR(rng *rand.Rand, rows, cols int, density float64, ones bool) *tensor.CSR {
	a := &tensor.CSR{Rows: rows, Cols: cols, Offsets: make([]int64, rows+1)}
	for i := range rows {
		for j := range cols {
			if rng.Float64() < density {
				a.Indices = append(a.Indices, int32(j))
				if !ones {
					a.Values = append(a.Values, rng.Float32()*2-1)
				}
			}
		}
		a.Offsets[i+1] = int64(len(a.Indices))
	}
	return a
}

// Sparse rows travel as their entries (a count, the columns and, unless
// every entry is 1, the values), and a batch of some own rows and some
// sent ones is the CSR of those rows in order, with values only where a
// row has them.
func TestSparseRowsTravelAsTheirEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name                string
		ownOnes, remoteOnes bool
		wantValues          bool
	}{
		{"values", false, false, true},
		{"ones", true, true, false},
		{"own ones, sent values", true, false, true},
		{"own values, sent ones", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own := rowStore{csr: randomCSR(rng, 20, 30, 0.1, tc.ownOnes)}
			remote := rowStore{csr: randomCSR(rng, 15, 30, 0.1, tc.remoteOnes)}
			asked := []int32{3, 0, 14, 7, 7, 2}
			msg := remote.appendSparseRows(nil, asked)
			nnz := 0
			for _, r := range asked {
				nnz += int(remote.csr.Offsets[r+1] - remote.csr.Offsets[r])
			}
			perEntry := 8
			if tc.remoteOnes {
				perEntry = 4
			}
			if want := 4*len(asked) + perEntry*nnz; len(msg) != want {
				t.Fatalf("%d bytes for %d rows of %d entries, want %d", len(msg), len(asked), nnz, want)
			}
			var m sparseRows
			if err := readSparseRows(&m, msg, len(asked), 30); err != nil {
				t.Fatal(err)
			}
			// Interleave: own row 5, sent rows 0..5, own rows 19 and 0.
			srcs := []rowSource{{r: 5}}
			want := []*tensor.Matrix{own.csr.SelectRows([]int32{5}).Dense()}
			for i := range asked {
				srcs = append(srcs, rowSource{msg: &m, r: i})
			}
			want = append(want, remote.csr.SelectRows(asked).Dense())
			srcs = append(srcs, rowSource{r: 19}, rowSource{r: 0})
			want = append(want, own.csr.SelectRows([]int32{19, 0}).Dense())
			var g sparseGather
			got := g.gather(own, srcs).Sparse
			if err := got.Validate(); err != nil {
				t.Fatal(err)
			}
			if (got.Values != nil) != tc.wantValues {
				t.Fatalf("values %v, want %v", got.Values != nil, tc.wantValues)
			}
			var wantData []float32
			for _, w := range want {
				wantData = append(wantData, w.Data...)
			}
			if d := got.Dense(); d.Rows != len(srcs) || !slices.Equal(d.Data, wantData) {
				t.Fatalf("gathered rows differ from the rows selected")
			}
		})
	}
}

// A message that does not hold the rows asked is refused, never read out
// of bounds.
func TestReadSparseRowsRefusesBadMessages(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := rowStore{csr: randomCSR(rng, 4, 10, 0.5, false)}
	good := x.appendSparseRows(nil, []int32{0, 1, 2, 3})
	huge := slices.Clone(good)
	huge[0], huge[1], huge[2], huge[3] = 0xff, 0xff, 0xff, 0xff
	outside := rowStore{csr: &tensor.CSR{Rows: 1, Cols: 20, Offsets: []int64{0, 1}, Indices: []int32{15}}}
	for _, tc := range []struct {
		name string
		b    []byte
		n    int
		want string
	}{
		{"short of the counts", good[:7], 4, "bytes for 4 sparse rows"},
		{"an entry missing", good[:len(good)-4], 4, "entries"},
		{"a byte more", append(slices.Clone(good), 0), 4, "entries"},
		{"a count beyond the message", huge, 4, "entries"},
		{"more rows than sent", good, 5, "entries"},
		{"a column outside the features", outside.appendSparseRows(nil, []int32{0}), 1, "column 15 outside the 10 features"},
	} {
		var m sparseRows
		err := readSparseRows(&m, tc.b, tc.n, 10)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	var m sparseRows
	if err := readSparseRows(&m, good, 4, 10); err != nil {
		t.Fatal(err)
	}
}
