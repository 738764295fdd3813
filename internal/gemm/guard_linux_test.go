package gemm

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns n floats that end where an inaccessible page begins, so
// that a kernel reading or writing past the slice faults.
func guarded(t *testing.T, n int) []float32 {
	page := syscall.Getpagesize()
	size := (n*4+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), (size-page)/4)
	return f[len(f)-n:]
}

// TestTransposeGuardPage runs every transposer on operands that end at an
// inaccessible page: the masked loads and stores of the last strip must
// stay inside the slices.
func TestTransposeGuardPage(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tr := range transposers() {
		for _, width := range []int{12, 16, 32} {
			for _, kb := range []int{1, 15, 16, 17, 255} {
				for _, w := range []int{1, width - 1, width} {
					ld := kb + 1
					src := guarded(t, (w-1)*ld+kb)
					copy(src, randBits(rng, len(src)))
					got := guarded(t, kb*width)
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
