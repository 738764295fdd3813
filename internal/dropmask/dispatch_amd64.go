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

// keepBitsAVX512 is keepBitsFrom(dst, n, key, base>>32, thr) for thr <
// Drop, in kernel_amd64.s: HASH's opmask of 32 decisions stored as it is,
// the last step's under a mask of its length; it leaves the upper half of
// a last word it does not reach untouched.
//
//go:noescape
func keepBitsAVX512(dst []uint64, n int, key, base uint64, thr int32)

// keepBitsAVX2 is keepBitsAVX512 on AVX2: 16 decisions a step, their
// 16-bit lanes packed to bytes whose sign bits VPMOVMSKB gathers.
//
//go:noescape
func keepBitsAVX2(dst []uint64, n int, key, base uint64, thr int32)

// kernelLevel returns the widest kernel level allows: AVX512, AVX2 or
// Generic (none).
func kernelLevel(level cpuid.Level) cpuid.Level {
	return min(level, cpuid.AVX512)
}
