//go:build !noasm

package compress

import (
	"golang.org/x/sys/cpu"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// quantAsm selects the AVX-512 kernels (quant_amd64.s), twins of the
// quantiser's and bf16's Go loops; the quantiser's also need BMI2's PEXT,
// PDEP and BZHI, which are fast on every CPU that has AVX-512.
var quantAsm = cpuid.Detected >= cpuid.AVX512 && cpu.X86.HasBMI2

// bf16EncodeAVX512 is bf16's Encode loop for len(x) a multiple of 16,
// writing 2·len(x) bytes at dst.
//
//go:noescape
func bf16EncodeAVX512(dst *byte, x []float32)

// bf16DecodeAVX512 is bf16's Decode loop for len(out) a multiple of 16.
//
//go:noescape
func bf16DecodeAVX512(out []float32, src *byte)

// quantEncodeRowsAVX512 is Encode's loop over rows ≥ 1 rows of width ≥ 1
// (header, min/max, dither base and codes), writing rows·rowBytes bytes.
//
//go:noescape
func quantEncodeRowsAVX512(dst *byte, x *float32, rows, width, rowBytes int, keyHash uint64, nbits uint64, levels float32)

// quantDecodeRowsAVX512 is Decode's loop over rows ≥ 1 rows of width ≥ 1.
//
//go:noescape
func quantDecodeRowsAVX512(out *float32, src *byte, rows, width, rowBytes int, nbits uint64)

// quantPackNarrow is a helper of quantEncodeRowsAVX512 with its own
// register convention; it is not called from Go.
func quantPackNarrow()
