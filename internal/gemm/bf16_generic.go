package gemm

import (
	"math"
	"unsafe"
)

// widenDAZ widens a bfloat16 to float32, reading subnormals as zero as
// VDPBF16PS does.
func widenDAZ(h uint16) float32 {
	if h&0x7f80 == 0 {
		h &= 0x8000
	}
	return math.Float32frombits(uint32(h) << 16)
}

// ftz flushes a subnormal float32 to zero of its sign, as VDPBF16PS does
// to every result.
func ftz(x float32) float32 {
	if b := math.Float32bits(x); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
}

// microBF16Go is the pure-Go bf16 micro-kernel and the twin of the
// VDPBF16PS one: c = a·b (or c += a·b when load) for an mr×nr tile, where
// step s of a holds a pair of k for each of mr rows (mr uint32 from a[s*mr])
// and step s of b a pair for each of nr columns, the lower k in the low
// half. It follows the instruction's arithmetic: per step, the accumulator
// adds the high halves' product, then the low halves', each rounded to
// nearest even with subnormal inputs and results flushed to zero. The
// products of two bfloat16s are exact in float32 (8-bit significands), so
// only the additions round; only a product that underflows float32's
// normal range could differ from the hardware, which rounds it with the
// addition.
func microBF16Go(mr, nr, steps int, a, b []uint32, c []float32, ldc int, load bool) {
	var acc [16 * 32]float32
	acc2 := acc[:mr*nr]
	var hi, lo [32]float32
	for s := 0; s < steps; s++ {
		for j, p := range b[s*nr : s*nr+nr] {
			lo[j], hi[j] = widenDAZ(uint16(p)), widenDAZ(uint16(p>>16))
		}
		for i, p := range a[s*mr : s*mr+mr] {
			alo, ahi := widenDAZ(uint16(p)), widenDAZ(uint16(p>>16))
			row := acc2[i*nr : i*nr+nr]
			for j := range row {
				row[j] = ftz(ftz(row[j]+ahi*hi[j]) + alo*lo[j])
			}
		}
	}
	for i := 0; i < mr; i++ {
		dst := c[i*ldc : i*ldc+nr]
		src := acc2[i*nr : i*nr+nr]
		if load {
			for j, v := range src {
				dst[j] += v
			}
		} else {
			copy(dst, src)
		}
	}
}

// genericBF16 is the portable bf16 micro-kernel used without assembly.
var genericBF16 = &bfKernel{name: "generic", mr: 4, nr: 8, run: func(steps int, a, b *uint32, c *float32, ldc int, load bool, _ uintptr) {
	microBF16Go(4, 8, steps, unsafe.Slice(a, 4*steps), unsafe.Slice(b, 8*steps), unsafe.Slice(c, 3*ldc+8), ldc, load)
}}

// zipGo is the pure-Go zipper, the twin of the assembly one: step s of dst
// (stride ldd) holds, in lanes j < h, column j of src row 2s in the low
// half and of row 2s+1 in the high half (src stride lds), and zero in lanes
// h ≤ j < lanes.
func zipGo(dst []uint32, ldd, lanes int, src []uint16, lds, h, steps int) {
	for s := 0; s < steps; s++ {
		d := dst[s*ldd : s*ldd+lanes]
		r0 := src[2*s*lds:][:h]
		r1 := src[(2*s+1)*lds:][:h]
		for j, v := range r0 {
			d[j] = uint32(v) | uint32(r1[j])<<16
		}
		clear(d[h:])
	}
}

var goZipper = &zipper{name: "generic", run: zipGo}

// microTilesGo is the pure-Go twin of the AMX kernel: c = a·b (or c += a·b
// when load) for an mr×nr tile, where a holds mr rows of steps pairs (row i
// from a[i*steps]) and b, as for microBF16Go, steps × nr pairs. It follows
// TDPBF16PS's arithmetic as Intel documents it: the accumulator starts from
// c when load is true and, per step, adds the low halves' product, then the
// high halves', with subnormal inputs and results flushed to zero.
func microTilesGo(mr, nr, steps int, a, b []uint32, c []float32, ldc int, load bool) {
	for i := 0; i < mr; i++ {
		row := c[i*ldc : i*ldc+nr]
		if !load {
			clear(row)
		}
		for s, p := range a[i*steps : (i+1)*steps] {
			alo, ahi := widenDAZ(uint16(p)), widenDAZ(uint16(p>>16))
			for j, q := range b[s*nr : s*nr+nr] {
				row[j] = ftz(ftz(row[j]+alo*widenDAZ(uint16(q))) + ahi*widenDAZ(uint16(q>>16)))
			}
		}
	}
}

// genericTiles runs the AMX kernel's packing and arithmetic in pure Go, so
// that both are tested on any CPU.
var genericTiles = &bfKernel{name: "generic-tiles", mr: 16, nr: 16, rowsA: true, stepAlign: 16, run: func(steps int, a, b *uint32, c *float32, ldc int, load bool, _ uintptr) {
	microTilesGo(16, 16, steps, unsafe.Slice(a, 16*steps), unsafe.Slice(b, 16*steps), unsafe.Slice(c, 15*ldc+16), ldc, load)
}}
