// Package vec provides single-threaded element-wise float32 kernels (axpy,
// scaling, sums, products, dot products, ReLU and the STREAM triad) in AVX-512
// and AVX2 assembly, each beside a pure-Go twin used by the noasm build, on
// other architectures and as the reference in tests. Callers split large
// arrays across cores themselves.
package vec
