//go:build !noasm

package compress

import (
	"golang.org/x/sys/cpu"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// quantAsm selects the AVX-512 quantiser kernels (quant_amd64.s), twins of
// encodeRow, the decode loops and minMax; they also need BMI2's PEXT and
// PDEP, which are fast on every CPU that has AVX-512.
var quantAsm = cpuid.Detected >= cpuid.AVX512 && cpu.X86.HasBMI2

// quantEncodeAVX512 is encodeRow(codes, row, 0, ...) for len(row) a
// multiple of 32.
//
//go:noescape
func quantEncodeAVX512(codes *byte, row []float32, lo, scale float32, top uint32, base uint64, nbits uint64)

// quantDecodeAVX512 decodes len(row) (a multiple of 16) values: 8-bit
// codes as lo + c·step, narrower ones through tab.
//
//go:noescape
func quantDecodeAVX512(row []float32, codes *byte, lo, step float32, tab *[16]float32, nbits uint64)

// minMaxAVX512 is minMax for len(x) a positive multiple of 16, up to the
// sign of a zero.
//
//go:noescape
func minMaxAVX512(x []float32) (lo, hi float32)

// bf16EncodeAVX512 is bf16's Encode loop for len(x) a multiple of 16,
// writing 2·len(x) bytes at dst.
//
//go:noescape
func bf16EncodeAVX512(dst *byte, x []float32)

// bf16DecodeAVX512 is bf16's Decode loop for len(out) a multiple of 16.
//
//go:noescape
func bf16DecodeAVX512(out []float32, src *byte)
