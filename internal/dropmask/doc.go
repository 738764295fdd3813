// Package dropmask decides which elements a dropout drops and applies the
// decision to rows of float32. Element (row, col) is dropped when lane
// col%4 (16 bits) of Mix64(key ^ (row<<32 | col/4)) is below a threshold,
// so the decision depends only on the key, the global row id and the
// column: never on how rows are split across workers or batches. Apply runs
// in AVX-512 or AVX2 assembly beside its pure-Go twin, which the noasm
// build, other CPUs and the tests use.
package dropmask
