//go:build !noasm

package spmm

import "github.com/graft-gnn/graft/internal/cpuid"

// Assembly kernels in kernel_amd64.s, twins of mulRowsGeneric and scatterGeneric.

//go:noescape
func mulRowsAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

// mulRowsFarAVX512 is mulRowsAVX512 prefetching into L2, further ahead.
//
//go:noescape
func mulRowsFarAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

// mulRowsStreamAVX512 and mulRowsFarStreamAVX512 are mulRowsAVX512 and
// mulRowsFarAVX512 writing y's whole vectors with non-temporal stores: y
// and ldy·4 must be multiples of 64 bytes (see streamStores).
//
//go:noescape
func mulRowsStreamAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

//go:noescape
func mulRowsFarStreamAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

//go:noescape
func scatterAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int)

//go:noescape
func mulRowsAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

// mulRowsStreamAVX2 is mulRowsAVX2 writing y as mulRowsStreamAVX512 does.
//
//go:noescape
func mulRowsStreamAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

//go:noescape
func scatterAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int)

//go:noescape
func mulRowsBF16AVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

// mulRowsBF16FarAVX512 is mulRowsBF16AVX512 prefetching into L2, further ahead.
//
//go:noescape
func mulRowsBF16FarAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

// mulRowsBF16StreamAVX512 and mulRowsBF16FarStreamAVX512 are the bf16
// kernels writing y as mulRowsStreamAVX512 does.
//
//go:noescape
func mulRowsBF16StreamAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

//go:noescape
func mulRowsBF16FarStreamAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

//go:noescape
func mulRowsBF16AVX2(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

// mulRowsMaskedAVX512 is mulRowsAVX512 on gathered rows dropped by their
// keep bits (kernel_masked_amd64.s), mulRowsMaskedFarAVX512 its far twin.
//
//go:noescape
func mulRowsMaskedAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

//go:noescape
func mulRowsMaskedFarAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

// mulRowsMaskedAVX2 is mulRowsAVX2 on gathered rows dropped by their keep
// bits, each vector's byte of them expanded to lanes.
//
//go:noescape
func mulRowsMaskedAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

// mulRowsMaskedBF16AVX512, its far twin and mulRowsMaskedBF16AVX2 are the
// masked row kernels with x in bfloat16 (kernel_masked_bf16_amd64.s).
//
//go:noescape
func mulRowsMaskedBF16AVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

//go:noescape
func mulRowsMaskedBF16FarAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

//go:noescape
func mulRowsMaskedBF16AVX2(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

// farPaysAVX512 reports whether the AVX-512 far kernels beat the near ones
// on this CPU: on Intel cores and on AMD's family 0x19, whose only cores
// with AVX-512 are Zen 4s; not on Zen 5 (family 0x1A). See farPays.
func farPaysAVX512() bool { return cpuid.Intel || cpuid.AMD && cpuid.Family == 0x19 }

// kernelsFor returns the widest kernels level allows.
func kernelsFor(level cpuid.Level) kernelSet {
	switch {
	case level >= cpuid.AVX512:
		return kernelSet{level: cpuid.AVX512, scatter: scatterAVX512, farPays: farPaysAVX512(),
			rows:           [2][2]rowKernel{{mulRowsAVX512, mulRowsStreamAVX512}, {mulRowsFarAVX512, mulRowsFarStreamAVX512}},
			rowsBF16:       [2][2]rowKernelBF16{{mulRowsBF16AVX512, mulRowsBF16StreamAVX512}, {mulRowsBF16FarAVX512, mulRowsBF16FarStreamAVX512}},
			rowsMasked:     [2]rowKernelMasked{mulRowsMaskedAVX512, mulRowsMaskedFarAVX512},
			rowsMaskedBF16: [2]rowKernelMaskedBF16{mulRowsMaskedBF16AVX512, mulRowsMaskedBF16FarAVX512}}
	case level >= cpuid.AVX2:
		return kernelSet{level: cpuid.AVX2, scatter: scatterAVX2,
			rows:           [2][2]rowKernel{{mulRowsAVX2, mulRowsStreamAVX2}, {mulRowsAVX2, mulRowsStreamAVX2}},
			rowsBF16:       [2][2]rowKernelBF16{{mulRowsBF16AVX2, mulRowsBF16AVX2}, {mulRowsBF16AVX2, mulRowsBF16AVX2}},
			rowsMasked:     [2]rowKernelMasked{mulRowsMaskedAVX2, mulRowsMaskedAVX2},
			rowsMaskedBF16: [2]rowKernelMaskedBF16{mulRowsMaskedBF16AVX2, mulRowsMaskedBF16AVX2}}
	}
	return generic
}
