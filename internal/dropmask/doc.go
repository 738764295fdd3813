// Package dropmask decides which elements a dropout drops and applies the
// decision to rows of float32. Element (row, col) is dropped when lane
// col%4 (16 bits) of Mix64(key ^ (row<<32 | col/4)) is below a threshold,
// so the decision depends only on the key, the global row id and the
// column: never on how rows are split across workers or batches. Apply
// applies the decisions to a row; KeepBits writes them as bits, 64 to a
// word, for a product that applies them as it reads the row
// (spmm.MulCSRMasked). Both run in AVX-512 or AVX2 assembly beside their
// pure-Go twins, which the noasm build, other CPUs and the tests use.
package dropmask
