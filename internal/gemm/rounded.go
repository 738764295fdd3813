package gemm

import (
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/freelist"
)

// GemmRounded is GemmBF16 for float32 operands: C = op(A')·op(B'), or
// C += op(A')·op(B') when accumulate is true, where A' and B' are A and B
// rounded to the nearest bfloat16 (ties to even). The rounding happens as
// the blocks are packed, so neither operand is ever copied whole: these are
// mixed-precision training's products, float32 activations and weights
// multiplied at the bf16 kernels' rate with float32 sums. The result is
// GemmBF16's on the rounded operands, bit for bit.
func GemmRounded(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if trivial(m, n, k, c, ldc, accumulate) {
		return
	}
	ar, ac, br, bc := storedShapes(transA, transB, m, n, k)
	checkMatrix("A", a, ar, ac, lda)
	checkMatrix("B", b, br, bc, ldb)
	kern := activeBF16
	if kern.run == nil {
		// Gemm's kernels, the packed blocks rounded in cache.
		p := problem{kern: active, transA: transA, transB: transB, m: m, n: n, k: k,
			a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, accumulate: accumulate, round: true}
		p.run()
		return
	}
	p := bfProblem{
		kern: kern, transA: transA, transB: transB, m: m, n: n, k: k,
		a32: a, lda: lda, b32: b, ldb: ldb, c: c, ldc: ldc, accumulate: accumulate,
	}
	p.run()
}

// roundScratches are roundValues' bf16 pieces: on the stack, one would
// escape through bf16's function values and be allocated every call.
var roundScratches freelist.List[[1024]uint16]

// roundValues sets dst to src's values rounded to bfloat16 (dst may be
// src).
func roundValues(dst, src []float32) {
	h := roundScratches.Get()
	for lo := 0; lo < len(src); lo += len(h) {
		hi := min(lo+len(h), len(src))
		bf16.Encode(h[:hi-lo], src[lo:hi])
		bf16.Decode(dst[lo:hi], h[:hi-lo])
	}
	roundScratches.Put(h)
}

// roundBlock rounds the block rows [r0, r0+rows) × columns [c0, c0+cols)
// of src (row stride ld) to bfloat16 into *buf, at an even stride (which
// the pair packers take without a copy), and returns it and the stride.
func roundBlock(buf *[]uint16, src []float32, ld, r0, rows, c0, cols int) ([]uint16, int) {
	lds := cols + cols%2
	*buf = grow16(*buf, rows*lds)
	for r := 0; r < rows; r++ {
		bf16.Encode((*buf)[r*lds:r*lds+cols], src[(r0+r)*ld+c0:][:cols])
	}
	return *buf, lds
}

// roundedA returns a problem whose A is the rounded block of p's float32
// A that op(A)[i0:i0+mb, p0:p0+kb] reads, indexed from (0, 0).
func (p *bfProblem) roundedA(ws *bfWorkspace, i0, mb, p0, kb int) bfProblem {
	q := *p
	q.a32 = nil
	if p.transA {
		q.a, q.lda = roundBlock(&ws.round, p.a32, p.lda, p0, kb, i0, mb)
	} else {
		q.a, q.lda = roundBlock(&ws.round, p.a32, p.lda, i0, mb, p0, kb)
	}
	return q
}

// roundedB is roundedA for op(B)[p0:p0+kb, j0:j0+nb].
func (p *bfProblem) roundedB(ws *bfWorkspace, p0, kb, j0, nb int) bfProblem {
	q := *p
	q.b32 = nil
	if p.transB {
		q.b, q.ldb = roundBlock(&ws.round, p.b32, p.ldb, j0, nb, p0, kb)
	} else {
		q.b, q.ldb = roundBlock(&ws.round, p.b32, p.ldb, p0, kb, j0, nb)
	}
	return q
}
