//go:build !noasm

package vec

import "github.com/graft-gnn/graft/internal/cpuid"

// Assembly kernels in kernels_amd64.s and signs_amd64.s, twins of the *Generic functions.

//go:noescape
func axpyAVX512(alpha float32, x, y []float32)

//go:noescape
func scaleAVX512(alpha float32, x []float32)

//go:noescape
func addAVX512(dst, a, b []float32)

//go:noescape
func subAVX512(dst, a, b []float32)

//go:noescape
func mulAVX512(dst, a, b []float32)

//go:noescape
func dotAVX512(x, y []float32) float32

//go:noescape
func sumAVX512(x []float32) float32

//go:noescape
func triadAVX512(a, b, c []float32, s float32)

//go:noescape
func reluAVX512(dst, x []float32)

//go:noescape
func reluBackwardAVX512(dst, dy, y []float32)

//go:noescape
func signBitsAVX512(bits []uint64, x []float32)

//go:noescape
func keepByBitsAVX512(x []float32, bits []uint64, scale float32)

//go:noescape
func axpyAVX2(alpha float32, x, y []float32)

//go:noescape
func scaleAVX2(alpha float32, x []float32)

//go:noescape
func addAVX2(dst, a, b []float32)

//go:noescape
func subAVX2(dst, a, b []float32)

//go:noescape
func mulAVX2(dst, a, b []float32)

//go:noescape
func dotAVX2(x, y []float32) float32

//go:noescape
func sumAVX2(x []float32) float32

//go:noescape
func triadAVX2(a, b, c []float32, s float32)

//go:noescape
func reluAVX2(dst, x []float32)

//go:noescape
func reluBackwardAVX2(dst, dy, y []float32)

//go:noescape
func signBitsAVX2(bits []uint64, x []float32)

//go:noescape
func keepByBitsAVX2(x []float32, bits []uint64, scale float32)

var avx512Kernels = kernels{
	level:        cpuid.AVX512,
	axpy:         axpyAVX512,
	scale:        scaleAVX512,
	add:          addAVX512,
	sub:          subAVX512,
	mul:          mulAVX512,
	dot:          dotAVX512,
	sum:          sumAVX512,
	triad:        triadAVX512,
	relu:         reluAVX512,
	reluBackward: reluBackwardAVX512,
	signBits:     signBitsAVX512,
	keepByBits:   keepByBitsAVX512,
}

var avx2Kernels = kernels{
	level:        cpuid.AVX2,
	axpy:         axpyAVX2,
	scale:        scaleAVX2,
	add:          addAVX2,
	sub:          subAVX2,
	mul:          mulAVX2,
	dot:          dotAVX2,
	sum:          sumAVX2,
	triad:        triadAVX2,
	relu:         reluAVX2,
	reluBackward: reluBackwardAVX2,
	signBits:     signBitsAVX2,
	keepByBits:   keepByBitsAVX2,
}

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
