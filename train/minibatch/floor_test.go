package minibatch

import (
	"testing"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// The flop estimate follows the order a layer runs in: on a block of 2
// destinations, 5 sources and 6 entries, with 3 inputs and 4 outputs,
// aggregating first costs 6·3 + 2·3·4 = 42 multiply-adds against
// transforming first's 5·3·4 + 6·4 = 84; a first layer takes no input
// gradient, so backward costs one forward more; two operations a
// multiply-add.
func TestBatchFlops(t *testing.T) {
	op := &tensor.CSR{Rows: 2, Cols: 5, Offsets: []int64{0, 3, 6}, Indices: []int32{0, 2, 3, 1, 3, 4}, Values: make([]float32, 6)}
	b, err := nn.NewBlock(nn.Operators{GCN: op}, []int32{0, 1, 2, 3, 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nn.Config{Model: "gcn", InFeatures: 3, Classes: 4, Layers: 1}
	for _, c := range []struct {
		dense bool
		want  float64
	}{{true, 2 * (42 + 42)}, {false, 2 * (84 + 84)}} {
		if got := batchFlops(cfg, []*nn.Block{b}, c.dense); got != c.want {
			t.Errorf("dense input %v: %v flops, want %v", c.dense, got, c.want)
		}
	}
	// GAT on the same block, 2 layers: the hidden layer's 2 heads of 2
	// compute 4 columns, which the last layer reads; its 3 heads compute
	// 4 classes each, averaged. Each layer transforms its sources and
	// scores and sums every entry, 3 a column: 5·3·4 + 3·6·4 = 132, then
	// 5·4·12 + 3·6·12 = 456 multiply-adds.
	gat := nn.Config{Model: "gat", InFeatures: 3, Hidden: 2, Heads: 2, Classes: 4, OutputHeads: 3, Layers: 2}
	if got, want := batchFlops(gat, []*nn.Block{b}, true), float64(2*(132+132)+2*(456+2*456)); got != want {
		t.Errorf("GAT: %v flops, want %v", got, want)
	}
	x := nn.DenseFeatures(tensor.New(5, 3))
	if got, want := gatheredBytes(x, 4, []*nn.Block{b}), float64(4*15+8*3+8*6); got != want {
		t.Errorf("%v bytes gathered, want %v", got, want)
	}
	if got, want := gatheredBytes(x, 2, []*nn.Block{b}), float64(2*15+8*3+8*6); got != want {
		t.Errorf("bf16: %v bytes gathered, want %v", got, want)
	}
}
