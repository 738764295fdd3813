// Package tensor holds graft's numeric types, dense float32 matrices and CSR
// sparse matrices, and every operation a GNN's forward and backward passes
// need on them: dense products in the three transposition forms, sparse-dense
// products, element-wise maps, reductions, row softmax, and bf16/fp16
// conversion.
//
// The hot loops live in internal packages (internal/gemm, internal/spmm,
// internal/vec) as assembly kernels with pure-Go twins; this package checks
// shapes and splits work across cores. Operations write into a destination
// the caller owns, so training loops can reuse buffers and allocate nothing
// per step.
package tensor
