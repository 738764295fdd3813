// Package gemm multiplies dense row-major float32 matrices, C = op(A)·op(B),
// fast enough to train graph neural networks on CPUs.
//
// Operands are packed into cache-sized panels (the BLIS scheme) and multiplied
// by an AVX-512 or AVX2+FMA micro-kernel written in Go assembly, chosen at run
// time from the CPU's features; the build tag noasm, or a non-amd64 target,
// selects a pure-Go micro-kernel with the same packing. Packing a row-major
// operand into column steps is a transposition, done 16×16 in AVX-512
// registers when the CPU has them and 8×8 in AVX2 registers otherwise.
// Work is spread over cores with package parallel, and packing buffers are
// pooled so that a call allocates nothing after warm-up.
//
// GemmBF16 multiplies bfloat16 operands into a float32 C. Its packing puts
// pairs of k side by side, the unit of AVX512_BF16's VDPBF16PS and of AMX's
// TDPBF16PS. Where the CPU has AMX tiles and Linux grants them, a 32×32
// micro-kernel runs on TDPBF16PS; otherwise, on AMD's cores, on VDPBF16PS
// (both encoded by hand: Go's assembler lacks them); any other CPU,
// Intel's without AMX among them (their VDPBF16PS multiplies at half
// float32's rate), widens the operands as Gemm's kernels pack them (in
// the packing pass itself with AVX2, block by block first with AVX-512),
// and the noasm build runs pure-Go twins of the instructions' arithmetic.
package gemm
