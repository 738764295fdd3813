//go:build !noasm

package bf16

import (
	"unsafe"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// Assembly kernels in kernels_amd64.s, for n a multiple of 16; the Go
// wrappers finish the last n%16 values with the twins.

//go:noescape
func encodeAVX2(dst *uint16, src *float32, n int)

//go:noescape
func decodeAVX2(dst *float32, src *uint16, n int)

//go:noescape
func decodeRowsAVX2(dst *float32, ldd int, src *uint16, lds, rows, cols int)

//go:noescape
func encodeAVX512(dst *uint16, src *float32, n int)

//go:noescape
func decodeAVX512(dst *float32, src *uint16, n int)

func encode512(dst []uint16, src []float32) {
	n := len(src) &^ 15
	if n > 0 {
		encodeAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	encodeGeneric(dst[n:len(src)], src[n:])
}

func decode512(dst []float32, src []uint16) {
	n := len(src) &^ 15
	if n > 0 {
		decodeAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	decodeGeneric(dst[n:len(src)], src[n:])
}

func encode2(dst []uint16, src []float32) {
	n := len(src) &^ 15
	if n > 0 {
		encodeAVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	encodeGeneric(dst[n:len(src)], src[n:])
}

func decode2(dst []float32, src []uint16) {
	n := len(src) &^ 15
	if n > 0 {
		decodeAVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	decodeGeneric(dst[n:len(src)], src[n:])
}

// decodeRows2 widens the columns up to a multiple of 8 in assembly, the
// rest of each row with the twin.
func decodeRows2(dst []float32, ldd int, src []uint16, lds, rows, cols int) {
	n := cols &^ 7
	if n > 0 {
		decodeRowsAVX2(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, rows, n)
	}
	if n < cols {
		for r := 0; r < rows; r++ {
			decodeGeneric(dst[r*ldd+n:r*ldd+cols], src[r*lds+n:r*lds+cols])
		}
	}
}

// decodeRows512 widens each row with decode512.
func decodeRows512(dst []float32, ldd int, src []uint16, lds, rows, cols int) {
	for r := 0; r < rows; r++ {
		decode512(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
	}
}

// gatherRows returns a Gather that widens each row with decode; the rows
// are short (a feature row is a few hundred bytes) and random, so the cost
// is the row's cache misses, which the next rows' prefetch hides.
func gatherRows(decode func(dst []float32, src []uint16)) func(dst []float32, ldd int, src []uint16, lds, width int, idx []int32) {
	return func(dst []float32, ldd int, src []uint16, lds, width int, idx []int32) {
		for i, r := range idx {
			if i+2 < len(idx) {
				prefetchRow(src, int(idx[i+2])*lds, width)
			}
			decode(dst[i*ldd:i*ldd+width], src[int(r)*lds:int(r)*lds+width])
		}
	}
}

//go:noescape
func prefetchLines(p *uint16, bytes int)

// prefetchRow asks for the cache lines of src[off:off+width].
func prefetchRow(src []uint16, off, width int) {
	prefetchLines(&src[off], 2*width)
}

var (
	avx512Kernels = kernels{level: cpuid.AVX512, encode: encode512, decode: decode512, decodeRows: decodeRows512, gather: gatherRows(decode512)}
	avx2Kernels   = kernels{level: cpuid.AVX2, encode: encode2, decode: decode2, decodeRows: decodeRows2, gather: gatherRows(decode2)}
)

// kernelsFor returns the widest kernels level allows.
func kernelsFor(level cpuid.Level) kernels {
	switch {
	case level >= cpuid.AVX512:
		return avx512Kernels
	case level >= cpuid.AVX2:
		return avx2Kernels
	}
	return generic
}
