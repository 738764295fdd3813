//go:build !noasm

package dropmask

import "github.com/graft-gnn/graft/internal/cpuid"

// applyAVX512 is applyFrom(y, x, 0, key, base>>32, thr, scale) for thr <
// Drop and len(y) ≥ len(x), in kernel_amd64.s: eight hashes at a time with
// VPMULLQ, the lanes compared with VPCMPUW into an opmask that zeroes the
// dropped products; the last columns short of 32 under a length mask.
//
//go:noescape
func applyAVX512(y, x []float32, key, base uint64, thr int32, scale float32)

// applyAVX2 is applyAVX512 on AVX2: four hashes at a time, each 64-bit
// product from three 32-bit ones (VPMULUDQ), the lanes compared with
// VPMAXUW and VPCMPEQW and widened to masks that AND with the products;
// the last columns short of 16 under masks of their length.
//
//go:noescape
func applyAVX2(y, x []float32, key, base uint64, thr int32, scale float32)

// kernelLevel returns the widest kernel level allows: AVX512, AVX2 or
// Generic (none).
func kernelLevel(level cpuid.Level) cpuid.Level {
	return min(level, cpuid.AVX512)
}
