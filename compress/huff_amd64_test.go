//go:build !noasm

package compress

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/guardtest"
)

// The kernel writes the Go loop's streams, for every length of block up
// to a few chunks and a long one, under random tables of codes up to 11
// bits (lengths that need not make a prefix code: the kernel only packs
// them), reading nothing past the block and writing nothing past the
// room it is promised (both end at a faulting page).
func TestHuffKernelMatchesGo(t *testing.T) {
	if !huffAsm {
		t.Skip("no AVX-512 VBMI on this CPU")
	}
	r := rand.New(rand.NewPCG(41, 2))
	for trial := range 40 {
		var tab huffTable
		for s := range 256 {
			nb := r.IntN(12)
			if trial%4 == 0 {
				nb = 11
			}
			val := r.IntN(1 << nb)
			tab.lo[s], tab.hi[s] = byte(val), byte(val>>8)|byte(nb)<<4
		}
		for _, n := range []int{1, 2, 63, 64, 65, 127, 128, 129, 200 + trial, 5000 + 37*trial} {
			src := guardtest.Bytes(t, n)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			want := make([]byte, n*11/8+32)
			want = want[:tab.encodeGo(want, src)]
			got := guardtest.Bytes(t, n*11/8+32) // the room the kernel is promised, then a guard page
			got = got[:huffEncodeAVX512(&got[0], &src[0], n, &tab)]
			if !bytes.Equal(got, want) {
				t.Fatalf("trial %d, %d symbols: the kernel writes %d bytes, Go %d, or other bytes", trial, n, len(got), len(want))
			}
		}
	}
}
