package tensor

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/gemm"
)

// MatMul sets c = a·b.
func MatMul(c, a, b *Matrix) { matmul(c, a, false, b, false, false) }

// MatMulAdd sets c += a·b.
func MatMulAdd(c, a, b *Matrix) { matmul(c, a, false, b, false, true) }

// MatMulTN sets c = aᵀ·b, the shape of a weight gradient Xᵀ·dY.
func MatMulTN(c, a, b *Matrix) { matmul(c, a, true, b, false, false) }

// MatMulTNAdd sets c += aᵀ·b.
func MatMulTNAdd(c, a, b *Matrix) { matmul(c, a, true, b, false, true) }

// MatMulNT sets c = a·bᵀ, the shape of an input gradient dY·Wᵀ.
func MatMulNT(c, a, b *Matrix) { matmul(c, a, false, b, true, false) }

// MatMulNTAdd sets c += a·bᵀ.
func MatMulNTAdd(c, a, b *Matrix) { matmul(c, a, false, b, true, true) }

func matmul(c, a *Matrix, ta bool, b *Matrix, tb bool, acc bool) {
	m, k := checkProduct(c, a, ta, b, tb)
	gemm.Gemm(ta, tb, m, c.Cols, k, a.Data, a.Cols, b.Data, b.Cols, c.Data, c.Cols, acc)
}

// checkProduct panics unless c can hold op(a)·op(b), and returns op(a)'s
// shape.
func checkProduct(c, a *Matrix, ta bool, b *Matrix, tb bool) (m, k int) {
	m, k = a.Rows, a.Cols
	if ta {
		m, k = k, m
	}
	kb, n := b.Rows, b.Cols
	if tb {
		kb, n = n, kb
	}
	if k != kb || c.Rows != m || c.Cols != n {
		panic(fmt.Sprintf("tensor: matmul shapes: op(a) %d×%d, op(b) %d×%d, c %s", m, k, kb, n, c.Shape()))
	}
	return m, k
}

// Products multiplies matrices at one precision, chosen once for a model:
// FP32Products multiplies the float32 values as they are (the functions
// above); BF16Products, on a CPU whose bf16 instructions outpace its
// float32 ones (AMX, or AVX512_BF16 on AMD's cores: gemm.BF16Hardware),
// rounds both operands to bfloat16 as it
// packs them and sums in float32, mixed-precision training's products at
// the bf16 kernels' rate (gemm.GemmRounded). Elsewhere rounding would only
// cost time, so BF16Products multiplies as FP32Products does (Rounds).
type Products struct{ bf16 bool }

var (
	FP32Products = Products{}
	BF16Products = Products{bf16: true}
)

// Rounds reports whether p's products round their operands to bfloat16 on
// this CPU.
func (p Products) Rounds() bool { return p.bf16 && gemm.BF16Hardware() }

// MatMul sets c = a·b.
func (p Products) MatMul(c, a, b *Matrix) { p.matmul(c, a, false, b, false, false) }

// MatMulAdd sets c += a·b.
func (p Products) MatMulAdd(c, a, b *Matrix) { p.matmul(c, a, false, b, false, true) }

// MatMulTN sets c = aᵀ·b.
func (p Products) MatMulTN(c, a, b *Matrix) { p.matmul(c, a, true, b, false, false) }

// MatMulNT sets c = a·bᵀ.
func (p Products) MatMulNT(c, a, b *Matrix) { p.matmul(c, a, false, b, true, false) }

// MatMulNTAdd sets c += a·bᵀ.
func (p Products) MatMulNTAdd(c, a, b *Matrix) { p.matmul(c, a, false, b, true, true) }

// Gemm is gemm.Gemm, or gemm.GemmRounded for BF16Products, on raw
// row-major slices.
func (p Products) Gemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if p.Rounds() {
		gemm.GemmRounded(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate)
		return
	}
	gemm.Gemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate)
}

func (p Products) matmul(c, a *Matrix, ta bool, b *Matrix, tb bool, acc bool) {
	if !p.Rounds() {
		matmul(c, a, ta, b, tb, acc)
		return
	}
	m, k := checkProduct(c, a, ta, b, tb)
	gemm.GemmRounded(ta, tb, m, c.Cols, k, a.Data, a.Cols, b.Data, b.Cols, c.Data, c.Cols, acc)
}
