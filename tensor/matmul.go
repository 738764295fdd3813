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
	m, k := a.Rows, a.Cols
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
	gemm.Gemm(ta, tb, m, n, k, a.Data, a.Cols, b.Data, b.Cols, c.Data, c.Cols, acc)
}
