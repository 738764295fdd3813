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

//go:noescape
func scatterAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int)

//go:noescape
func mulRowsAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

//go:noescape
func scatterAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int)

//go:noescape
func mulRowsBF16AVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

// mulRowsBF16FarAVX512 is mulRowsBF16AVX512 prefetching into L2, further ahead.
//
//go:noescape
func mulRowsBF16FarAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

//go:noescape
func mulRowsBF16AVX2(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

// farPaysAVX512 reports whether the AVX-512 far kernels beat the near ones
// on this CPU: on Intel cores and on AMD's family 0x19, whose only cores
// with AVX-512 are Zen 4s; not on Zen 5 (family 0x1A). See farPays.
func farPaysAVX512() bool { return cpuid.Intel || cpuid.AMD && cpuid.Family == 0x19 }

// kernelsFor returns the widest kernels level allows.
func kernelsFor(level cpuid.Level) kernelSet {
	switch {
	case level >= cpuid.AVX512:
		return kernelSet{level: cpuid.AVX512, rows: mulRowsAVX512, rowsFar: mulRowsFarAVX512, scatter: scatterAVX512,
			rowsBF16: mulRowsBF16AVX512, rowsBF16Far: mulRowsBF16FarAVX512, farPays: farPaysAVX512()}
	case level >= cpuid.AVX2:
		return kernelSet{level: cpuid.AVX2, rows: mulRowsAVX2, rowsFar: mulRowsAVX2, scatter: scatterAVX2,
			rowsBF16: mulRowsBF16AVX2, rowsBF16Far: mulRowsBF16AVX2}
	}
	return generic
}
