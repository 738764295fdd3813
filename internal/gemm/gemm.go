package gemm

// Gemm computes C = op(A)·op(B), or C += op(A)·op(B) when accumulate is true.
// op(A) is m×k: A is stored m×k with row stride lda when !transA, k×m with stride lda when transA.
// op(B) is k×n: B is stored k×n with row stride ldb when !transB, n×k with stride ldb when transB.
// C is m×n with row stride ldc. Any of m, n, k may be 0 (k == 0 with !accumulate zeroes C).
func Gemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	naive(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate)
}

// Kernel names the micro-kernel in use: "avx512", "avx2" or "generic".
func Kernel() string { return "generic" }

// naive is the obvious triple loop, the reference the fast paths are tested against.
func naive(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		if !accumulate {
			clear(ci)
		}
		for p := 0; p < k; p++ {
			var aip float32
			if transA {
				aip = a[p*lda+i]
			} else {
				aip = a[i*lda+p]
			}
			if aip == 0 {
				continue
			}
			if transB {
				for j := range ci {
					ci[j] += aip * b[j*ldb+p]
				}
			} else {
				bp := b[p*ldb : p*ldb+n]
				for j, v := range bp {
					ci[j] += aip * v
				}
			}
		}
	}
}
