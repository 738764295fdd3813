//go:build !noasm

package compress

import (
	"github.com/graft-gnn/graft/internal/cpuid"
	"golang.org/x/sys/cpu"
)

// huffAsm selects the AVX-512 kernel of huffTable.encode (huff_amd64.s),
// which needs VBMI's byte permutes and BMI2's shifts.
var huffAsm = cpuid.Detected >= cpuid.AVX512 && cpu.X86.HasAVX512VBMI && cpu.X86.HasBMI2

// huffEncodeAVX512 is huffTable.encodeGo of n ≥ 1 symbols at src into
// dst, which has room for n·11/8 + 32 bytes.
//
//go:noescape
func huffEncodeAVX512(dst, src *byte, n int, t *huffTable) int
