// Package spmm multiplies a sparse matrix in CSR form by a dense row-major
// matrix, y = A·x and y = Aᵀ·x, the neighbourhood aggregation of graph neural
// networks. The work is split over cores by nonzeros, and the row kernel is
// AVX-512 or AVX2 assembly that prefetches the gathered rows, with a pure-Go
// twin for the noasm build and other architectures. MulCSRBF16 gathers
// bfloat16 rows, half the bytes, and sums in float32. MulCSRMasked applies a
// dropout to the rows as it gathers them, from a bit per element: the
// AVX-512 kernel loads the bits as opmasks of the multiplications by the
// dropout's scale, the AVX2 one expands them to lanes, and either gives the
// bits of MulCSR on the dropped copy it never makes. MulCSRMaskedBF16 does
// the same on bfloat16 rows, widened as they are gathered, before the drop.
package spmm
