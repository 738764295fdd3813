package gemm

import (
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/guardtest"
)

// TestTransposeGuardPage runs every transposer on operands that end at an
// inaccessible page: the masked loads and stores of the last strip must
// stay inside the slices.
func TestTransposeGuardPage(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tr := range transposers() {
		for _, width := range []int{6, 12, 16, 32} {
			for _, kb := range []int{1, 15, 16, 17, 255} {
				for _, w := range []int{1, width - 1, width} {
					ld := kb + 1
					src := guardtest.Float32s(t, (w-1)*ld+kb)
					copy(src, randBits(rng, len(src)))
					got := guardtest.Float32s(t, kb*width)
					want := make([]float32, kb*width)
					withTransposer(tr, func() { packTranspose(got, src, ld, 0, 0, w, kb, width) })
					packTransposeOld(want, src, ld, 0, 0, w, kb, width)
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("%s width=%d kb=%d w=%d: dst[%d] differs", tr.name, width, kb, w, i)
					}
				}
			}
		}
	}
}

// TestTransposerGuardPage runs every transposer directly on operands that
// end at an inaccessible page, with strides past lanes and kb, so that the
// last column's lanes and the last row's values are the last bytes mapped.
func TestTransposerGuardPage(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, tr := range transposers() {
		for _, lanes := range []int{3, 6, 8, 11, 16} {
			for _, h := range []int{1, lanes - 1, lanes} {
				for _, kb := range []int{1, 7, 8, 9, 17, 255} {
					if h < 1 {
						continue
					}
					ldd, lds := lanes+2, kb+3
					src := guardtest.Float32s(t, (h-1)*lds+kb)
					copy(src, randBits(rng, len(src)))
					got := guardtest.Float32s(t, (kb-1)*ldd+lanes)
					copy(got, randBits(rng, len(got)))
					want := append([]float32(nil), got...)
					tr.run(got, ldd, lanes, src, lds, h, kb)
					transposeGo(want, ldd, lanes, src, lds, h, kb)
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("%s lanes=%d h=%d kb=%d: dst[%d] differs", tr.name, lanes, h, kb, i)
					}
				}
			}
		}
	}
}
