//go:build !noasm

package dropmask

const haveAsm = true

// applyAVX512 is applyFrom(y, x, 0, key, base>>32, thr, scale) for thr <
// Drop and len(y) ≥ len(x), in kernel_amd64.s: eight hashes at a time with
// VPMULLQ, the lanes compared with VPCMPUW into an opmask that zeroes the
// dropped products; the last columns short of 32 under a length mask.
//
//go:noescape
func applyAVX512(y, x []float32, key, base uint64, thr int32, scale float32)
