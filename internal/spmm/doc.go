// Package spmm multiplies a sparse matrix in CSR form by a dense row-major
// matrix, y = A·x and y = Aᵀ·x, the neighbourhood aggregation of graph neural
// networks. The work is split over cores by nonzeros, and the row kernel is
// AVX-512 or AVX2 assembly that prefetches the gathered rows, with a pure-Go
// twin for the noasm build and other architectures. MulCSRBF16 gathers
// bfloat16 rows, half the bytes, and sums in float32.
package spmm
