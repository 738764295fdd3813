package minibatch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// The gather copies exactly the rows asked for, in order, repeats
// included, whatever the rows' width (one prefetch group of many rows, or
// rows wider than a group) and the batch's size (the parallel split).
func TestGatherCopiesTheRows(t *testing.T) {
	withEachGroupSize(t, testGatherCopiesTheRows)
}

// withEachGroupSize runs test with the prefetch groups of AMD's cores and
// of Intel's, whichever this CPU is.
func withEachGroupSize(t *testing.T, test func(*testing.T)) {
	saved := gatherGroupBytes
	defer func() { gatherGroupBytes = saved }()
	for _, bytes := range []int{12 << 10, 2560} {
		gatherGroupBytes = bytes
		t.Run(fmt.Sprintf("groups-of-%dB", bytes), test)
	}
}

func testGatherCopiesTheRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ rows, cols, batch int }{{50, 7, 13}, {5000, 100, 4000}, {10, 1, 10}, {40, 5000, 30}, {3, 3, 0}} {
		x := tensor.New(tc.rows, tc.cols)
		for i := range x.Data {
			x.Data[i] = rng.Float32()
		}
		ids := make([]int32, tc.batch)
		for i := range ids {
			ids[i] = int32(rng.IntN(tc.rows))
		}
		var g gatherer
		got := g.gather(nn.DenseFeatures(x), ids).Dense
		if got.Rows != tc.batch || got.Cols != tc.cols || !slices.Equal(got.Data, x.SelectRows(ids).Data) {
			t.Fatalf("%+v: the gathered rows are not x's rows ids", tc)
		}
	}
}
