package gemm

import "github.com/graft-gnn/graft/internal/bf16"

// GemmBF16 by conversion (convertBF16) runs Gemm's blocked algorithm on
// the bfloat16 operands, widened to float32 as they are packed. Where the
// transposer in use can widen (activeT.widen: AVX2 and the pure-Go one),
// packing reads the bf16 operand and writes the float32 panels in one
// pass; elsewhere each block is first widened whole (widenBlock), then
// packed as float32. Widening is exact, so both give Gemm's bits on the
// widened operands.

// packA16 packs op(A)[i0:i0+mb, p0:p0+kb] of the bf16 A into mr-row
// panels of float32, as packA packs a float32 A.
func (p *problem) packA16(dst []float32, i0, mb, p0, kb int) {
	mr := p.kern.mr
	for r := 0; r < mb; r += mr {
		w := min(mr, mb-r)
		panel := dst[r*kb : r*kb+mr*kb]
		if p.transA {
			widenCopy(panel, p.a16, p.lda, p0, i0+r, w, kb, mr)
		} else {
			widenTranspose(panel, p.a16, p.lda, i0+r, p0, w, kb, mr)
		}
	}
}

// packB16 packs op(B)[p0:p0+kb, j0:j0+nb] of the bf16 B into nr-column
// panels of float32, as packB packs a float32 B.
func (p *problem) packB16(dst []float32, p0, kb, j0, nb int) {
	nr := p.kern.nr
	for j := 0; j < nb; j += nr {
		w := min(nr, nb-j)
		panel := dst[j*kb : j*kb+nr*kb]
		if p.transB {
			widenTranspose(panel, p.b16, p.ldb, j0+j, p0, w, kb, nr)
		} else {
			widenCopy(panel, p.b16, p.ldb, p0, j0+j, w, kb, nr)
		}
	}
}

// widenCopy is packCopy from a bfloat16 src: rows row0..row0+kb, columns
// col0..col0+w, widened into kb steps of width values each.
func widenCopy(dst []float32, src []uint16, ld, row0, col0, w, kb, width int) {
	bf16.DecodeRows(dst, width, src[row0*ld+col0:], ld, kb, w)
	if w < width {
		for s := 0; s < kb; s++ {
			clear(dst[s*width+w : s*width+width])
		}
	}
}

// widenTranspose is packTranspose from a bfloat16 src, on activeT.widen.
func widenTranspose(dst []float32, src []uint16, ld, row0, col0, w, kb, width int) {
	transposeGroups(dst, src, ld, row0, col0, w, kb, width, activeT.widen)
}

// widenBlock widens the rows [r0, r0+rows) × columns [c0, c0+cols) of
// the bfloat16 matrix src (row stride ld) to float32, exactly, into *buf
// at stride cols: one block at a time, so the operand is never copied
// whole and the widened block is packed from cache.
func widenBlock(buf *[]float32, src []uint16, ld, r0, rows, c0, cols int) []float32 {
	*buf = grow(*buf, rows*cols)
	bf16.DecodeRows(*buf, cols, src[r0*ld+c0:], ld, rows, cols)
	return *buf
}
