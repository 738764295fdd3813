package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// Selected input rows train as the same rows copied into the batch, bit
// for bit, over three steps that reuse the buffers and update the
// parameters: read where they lie by a first layer that aggregates them
// first (GCN and SAGE, float32 and bf16 features, with and without a
// dropout, applied as they are gathered, after a bf16 row's widening; GCN
// without the Head it does not read), and copied by the model where it
// cannot (GAT, a block where the layer transforms first).
func TestSelectedRowsTrainAsCopiedRows(t *testing.T) {
	const n, classes = 400, 3
	gg := randomGraph(t, n, 3, 23)
	seeds := []int32{41, 3, 17, 28, 9, 300, 211}
	blocks := fullBlocks(t, gg, seeds, 2)
	for _, tc := range []struct {
		model         string
		in, hidden    int
		dropout       float64
		bf16, inPlace bool
	}{
		{"gcn", 8, 32, 0, false, true},
		{"sage", 8, 32, 0, false, true},
		{"gcn", 8, 32, 0, true, true},
		{"sage", 8, 32, 0, true, true},
		{"gcn", 8, 32, 0.5, false, true},
		{"sage", 8, 32, 0.3, false, true},
		{"sage", 100, 256, 0.5, false, true}, // products' width: whole words of bits and a tail
		{"gcn", 70, 128, 0.9, false, true},
		{"sage", 8, 32, 0.3, true, true},
		{"gcn", 8, 32, 0.5, true, true},
		{"sage", 100, 256, 0.5, true, true},
		{"gcn", 70, 128, 0.9, true, true},
		{"sage", 300, 64, 0.5, true, true}, // bf16 blocks of every width and a tail
		{"gat", 8, 32, 0, false, false},
		{"sage", 64, 1, 0, false, false}, // transforms first: fewer multiply-adds
	} {
		t.Run(fmt.Sprintf("%s/in%d/hidden%d/dropout%v/bf16=%v", tc.model, tc.in, tc.hidden, tc.dropout, tc.bf16), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 9))
			x := randomMatrix(n, tc.in, rng)
			whole, copied := Features{Dense: x}, Features{Dense: selectRows(x, blocks[0].SrcIDs)}
			if tc.bf16 {
				x16 := &tensor.MatrixBF16{Rows: n, Cols: tc.in, Data: make([]uint16, n*tc.in)}
				tensor.ToBF16(x16.Data, x.Data)
				// A batch gathers bf16 rows widened to float32.
				rows := x16.SelectRows(blocks[0].SrcIDs)
				widened := tensor.New(rows.Rows, rows.Cols)
				tensor.FromBF16(widened.Data, rows.Data)
				whole, copied = Features{BF16: x16}, Features{Dense: widened}
			}
			cfg := Config{Model: tc.model, InFeatures: tc.in, Hidden: tc.hidden, Classes: classes, Layers: 2, Heads: 2,
				Dropout: tc.dropout, Seed: 8}
			want, err := NewModel(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := NewModel(cfg)
			var head *tensor.Matrix
			if got.ReadsSelectedHead() || !tc.inPlace {
				head = tensor.FromSlice(blocks[0].NumDst, tc.in, slices.Clone(copied.Dense.Data[:blocks[0].NumDst*tc.in]))
			}
			if h := got.ReadsSelectedHead(); h != (tc.model == "sage") {
				t.Fatalf("ReadsSelectedHead = %v", h)
			}
			selected := Features{Selected: &Selected{From: whole, IDs: blocks[0].SrcIDs, Head: head}}
			if r := got.ReadsSelected(blocks, selected); r != tc.inPlace {
				t.Fatalf("ReadsSelected = %v, want %v", r, tc.inPlace)
			}
			if got.ReadsSelected(blocks, copied) {
				t.Fatal("ReadsSelected = true for rows that are not Selected")
			}
			for step := range 3 {
				wl := want.Forward(blocks, copied, true).Clone()
				gl := got.Forward(blocks, selected, true)
				same(t, fmt.Sprintf("step %d: logits", step), gl.Data, wl.Data)
				dy := randomMatrix(wl.Rows, wl.Cols, rng)
				want.Backward(dy)
				got.Backward(dy)
				for k, p := range want.Params() {
					q := got.Params()[k]
					same(t, fmt.Sprintf("step %d: %s's gradient", step, p.Name), q.Grad.Data, p.Grad.Data)
					for _, m := range []*Param{p, q} {
						for j, g := range m.Grad.Data {
							m.Value.Data[j] -= 0.1 * g
						}
					}
				}
			}
		})
	}
}

// A SAGE layer given Selected rows without the Head it reads says so.
func TestSAGEWithoutTheHeadPanics(t *testing.T) {
	const n = 400
	gg := randomGraph(t, n, 3, 23)
	blocks := fullBlocks(t, gg, []int32{41, 3, 17}, 2)
	m, err := NewModel(Config{Model: "sage", InFeatures: 8, Hidden: 32, Classes: 3, Layers: 2, Dropout: 0.5, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	x := Features{Selected: &Selected{From: Features{Dense: randomMatrix(n, 8, rand.New(rand.NewPCG(1, 2)))}, IDs: blocks[0].SrcIDs}}
	if !m.ReadsSelected(blocks, x) {
		t.Fatal("ReadsSelected = false")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Head") {
			t.Fatalf("recovered %v, want a panic about the Head", r)
		}
	}()
	m.Forward(blocks, x, true)
}

func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}
