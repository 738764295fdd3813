package spmm

import (
	"fmt"
	"math"
)

// Mask is a dropout applied to the rows a product gathers, as it gathers
// them: element c of the row gathered for nonzero p is kept, and
// multiplied by Scale, when bit c%64 of word Bits[Rows[p]·Stride + c/64]
// is set, and is +0 otherwise. Rows numbers the rows of the keep bits as
// the product's column indices number the rows of x (a batch's input
// rows, say, where x is the feature matrix they lie in), so that a
// gathered row is dropped by the bits of the row it stands for.
type Mask struct {
	Bits   []uint64
	Stride int     // words a row of Bits, at least (width+63)/64
	Rows   []int32 // one per nonzero
	Scale  float32
}

// rowKernelMasked is rowKernel with each gathered row dropped by its keep
// bits: row brows[p] of bits, stride bytes a row (see Mask).
type rowKernelMasked func(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

// rowKernelMaskedBF16 is rowKernelMasked with x in bfloat16.
type rowKernelMaskedBF16 func(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)

// MulCSRMasked is MulCSR on x's rows dropped by m as they are gathered:
// y[i, :width] = Σ_p val(p)·drop_p(x[indices[p], :width]), where drop_p
// keeps element c as x·m.Scale when its bit of row m.Rows[p] is set and
// makes it +0 otherwise. The result is MulCSR's on a copy of the gathered
// rows so dropped, bit for bit: the same products x·Scale, the same
// multiply-adds in the same order. It panics as MulCSR does, and if m's
// rows or bits are too short or a row of m.Rows falls outside m.Bits.
func MulCSRMasked(rows int, offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, m Mask, y []float32, ldy int, accumulate bool) {
	if !checkProduct("MulCSRMasked", rows, offsets, indices, values, ldx, width, len(y), ldy) {
		return
	}
	m.check("MulCSRMasked", width, offsets[rows])
	t := mulPool.Get()
	xRows := rowsIn(len(x), ldx, width)
	*t = m.task(offsets, indices, values, ldx, width, y, ldy, accumulate, xRows, t.bounds)
	t.kernelMasked, _ = impl.maskedKernels(xRows, width, 4)
	t.x = x
	t.run("MulCSRMasked", rows)
}

// MulCSRMaskedBF16 is MulCSRMasked with x in bfloat16 (uint16 bit
// patterns): each gathered element is widened exactly to float32, then
// kept as that times m.Scale or made +0, then multiply-added, so the
// result is MulCSR's on a copy of the gathered rows widened and then
// dropped, bit for bit. It panics as MulCSRMasked does.
func MulCSRMaskedBF16(rows int, offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, m Mask, y []float32, ldy int, accumulate bool) {
	if !checkProduct("MulCSRMaskedBF16", rows, offsets, indices, values, ldx, width, len(y), ldy) {
		return
	}
	m.check("MulCSRMaskedBF16", width, offsets[rows])
	t := mulPool.Get()
	xRows := rowsIn(len(x), ldx, width)
	*t = m.task(offsets, indices, values, ldx, width, y, ldy, accumulate, xRows, t.bounds)
	_, t.kernelMaskedBF16 = impl.maskedKernels(xRows, width, 2)
	t.xb = x
	t.run("MulCSRMaskedBF16", rows)
}

// check panics if m's bits are too narrow for rows of width elements or
// it has fewer rows than the product's nnz nonzeros.
func (m Mask) check(op string, width int, nnz int64) {
	if m.Stride < (width+63)/64 || int64(len(m.Rows)) < nnz {
		panic(fmt.Sprintf("spmm: %s: mask of stride %d and %d rows for width %d and %d nonzeros", op, m.Stride, len(m.Rows), width, nnz))
	}
}

// task is a masked product's task by m, without its kernel and x.
func (m Mask) task(offsets []int64, indices []int32, values []float32, ldx, width int, y []float32, ldy int, accumulate bool, xRows int, bounds []int) mulTask {
	return mulTask{
		offsets: offsets, indices: indices, values: values,
		ldx: ldx, width: width, y: y, ldy: ldy, accumulate: accumulate,
		xRows: xRows, bounds: bounds,
		bits: m.Bits, brows: m.Rows, stride: m.Stride, scale: m.Scale, bitRows: len(m.Bits) / m.Stride,
	}
}

// maskedKernels returns the float32 and bf16 masked row kernels for
// gathering xRows rows of width elements of elem bytes (see rowKernels).
func (k *kernelSet) maskedKernels(xRows, width, elem int) (rowKernelMasked, rowKernelMaskedBF16) {
	if k.farPays && int64(xRows)*int64(width)*int64(elem) > farGatherBytes {
		return k.rowsMasked[1], k.rowsMaskedBF16[1]
	}
	return k.rowsMasked[0], k.rowsMaskedBF16[0]
}

// runMasked computes rows [lo, hi) of a masked product after checking
// their rows of keep bits.
func (t *mulTask) runMasked(lo, hi int) {
	lim := uint32(t.bitRows)
	for i := lo; i < hi; i++ {
		for _, r := range t.brows[t.offsets[i]:t.offsets[i+1]] {
			if uint32(r) >= lim {
				t.badMask.CompareAndSwap(0, int64(i)+1)
				return
			}
		}
	}
	if t.kernelMaskedBF16 != nil {
		t.kernelMaskedBF16(t.offsets[lo:hi+1], t.indices, t.values, t.xb, t.ldx, t.width, t.y[lo*t.ldy:], t.ldy, t.accumulate, t.bits, t.brows, 8*t.stride, t.scale)
		return
	}
	t.kernelMasked(t.offsets[lo:hi+1], t.indices, t.values, t.x, t.ldx, t.width, t.y[lo*t.ldy:], t.ldy, t.accumulate, t.bits, t.brows, 8*t.stride, t.scale)
}

// mulRowsMaskedGeneric is the pure-Go twin of the masked row kernels:
// mulRowsGeneric with each gathered element dropped as dropmask.Apply
// drops it, x·scale with its bits cleared where its keep bit is.
func mulRowsMaskedGeneric(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32) {
	words := stride / 8
	for r := 0; r+1 < len(offsets); r++ {
		yr := y[r*ldy : r*ldy+width]
		if !accumulate {
			clear(yr)
		}
		for p := offsets[r]; p < offsets[r+1]; p++ {
			v := float32(1)
			if values != nil {
				v = values[p]
			}
			xr := x[int(indices[p])*ldx:][:width]
			br := bits[int(brows[p])*words:][:(width+63)/64]
			for k := range xr {
				d := math.Float32frombits(math.Float32bits(xr[k]*scale) & -uint32(br[k/64]>>(k%64)&1))
				yr[k] += v * d
			}
		}
	}
}

// mulRowsMaskedBF16Generic is the pure-Go twin of the bf16 masked row
// kernels: mulRowsMaskedGeneric on x's elements widened exactly, before
// they are scaled, as a widened copy would be dropped.
func mulRowsMaskedBF16Generic(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32) {
	words := stride / 8
	for r := 0; r+1 < len(offsets); r++ {
		yr := y[r*ldy : r*ldy+width]
		if !accumulate {
			clear(yr)
		}
		for p := offsets[r]; p < offsets[r+1]; p++ {
			v := float32(1)
			if values != nil {
				v = values[p]
			}
			xr := x[int(indices[p])*ldx:][:width]
			br := bits[int(brows[p])*words:][:(width+63)/64]
			for k, h := range xr {
				d := math.Float32frombits(math.Float32bits(math.Float32frombits(uint32(h)<<16)*scale) & -uint32(br[k/64]>>(k%64)&1))
				yr[k] += v * d
			}
		}
	}
}
