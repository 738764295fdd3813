//go:build !noasm

package dropmask

const haveAsm = true

// applyAVX512 is applyFrom(y, x, 0, key, base>>32, thr, scale) for len(x) a
// multiple of 32 and thr < Drop, in kernel_amd64.s: eight hashes at a time
// with VPMULLQ, the lanes compared with VPCMPUW into an opmask that zeroes
// the dropped products.
//
//go:noescape
func applyAVX512(y, x []float32, key, base uint64, thr int32, scale float32)
