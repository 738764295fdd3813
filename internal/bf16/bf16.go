package bf16

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// FromFloat32 rounds f to the nearest bfloat16, ties to even. Values beyond
// the largest bfloat16 become ±Inf, and a NaN becomes a quiet NaN with the
// same sign and top payload bits.
func FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	// Adding 0x7fff, plus one when the kept half is odd, carries into the
	// kept half exactly when the dropped half is past the midpoint, or at
	// it with an odd kept half; a carry out of the mantissa rounds up the
	// exponent, to Inf at the top.
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// ToFloat32 widens h to float32 exactly.
func ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Encode rounds src into dst, as FromFloat32; len(dst) must be at least
// len(src).
func Encode(dst []uint16, src []float32) {
	if len(dst) < len(src) {
		panic(fmt.Sprintf("bf16: Encode: len(dst) = %d < len(src) = %d", len(dst), len(src)))
	}
	impl.encode(dst[:len(src)], src)
}

// Decode widens src into dst; len(dst) must be at least len(src).
func Decode(dst []float32, src []uint16) {
	if len(dst) < len(src) {
		panic(fmt.Sprintf("bf16: Decode: len(dst) = %d < len(src) = %d", len(dst), len(src)))
	}
	impl.decode(dst[:len(src)], src)
}

// DecodeRows widens rows×cols values of src (row stride lds) into dst
// (row stride ldd): a block of a bf16 matrix, or the panels a GEMM packs
// it into. It panics if the slices are too short for the shape.
func DecodeRows(dst []float32, ldd int, src []uint16, lds, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	if rows < 0 || cols < 0 || ldd < cols || lds < cols || len(dst) < (rows-1)*ldd+cols || len(src) < (rows-1)*lds+cols {
		panic(fmt.Sprintf("bf16: DecodeRows: %d×%d, strides %d and %d, len(dst) = %d, len(src) = %d", rows, cols, ldd, lds, len(dst), len(src)))
	}
	impl.decodeRows(dst, ldd, src, lds, rows, cols)
}

// Gather copies rows idx[i] of src (width values each, row stride lds) to
// row i of dst (stride ldd), widening them to float32: the step that feeds
// a batch's bf16 features to float32 code. It panics if an index falls
// outside src or the slices are too short.
func Gather(dst []float32, ldd int, src []uint16, lds, width int, idx []int32) {
	if width == 0 || len(idx) == 0 {
		return
	}
	if width < 0 || ldd < width || lds < width || len(dst) < (len(idx)-1)*ldd+width {
		panic(fmt.Sprintf("bf16: Gather: width %d, strides %d and %d, len(dst) = %d for %d rows", width, ldd, lds, len(dst), len(idx)))
	}
	rows := 0
	if len(src) >= width {
		rows = (len(src)-width)/lds + 1
	}
	for i, r := range idx {
		if uint(r) >= uint(rows) {
			panic(fmt.Sprintf("bf16: Gather: idx[%d] = %d outside src's %d rows", i, r, rows))
		}
	}
	impl.gather(dst, ldd, src, lds, width, idx)
}

// GatherBF16 copies rows idx[i] of src to row i of dst, both bfloat16: the
// gather of stored activations and halo messages, which stay in bf16.
// It panics if an index falls outside src or the slices are too short.
func GatherBF16(dst []uint16, ldd int, src []uint16, lds, width int, idx []int32) {
	if width == 0 || len(idx) == 0 {
		return
	}
	if width < 0 || ldd < width || lds < width || len(dst) < (len(idx)-1)*ldd+width {
		panic(fmt.Sprintf("bf16: GatherBF16: width %d, strides %d and %d, len(dst) = %d for %d rows", width, ldd, lds, len(dst), len(idx)))
	}
	rows := 0
	if len(src) >= width {
		rows = (len(src)-width)/lds + 1
	}
	for i, r := range idx {
		if uint(r) >= uint(rows) {
			panic(fmt.Sprintf("bf16: GatherBF16: idx[%d] = %d outside src's %d rows", i, r, rows))
		}
		// copy is the runtime's vectorised memmove: no kernel of our own
		// beats it on a row copy.
		copy(dst[i*ldd:i*ldd+width], src[int(r)*lds:int(r)*lds+width])
	}
}

type kernels struct {
	level      cpuid.Level
	encode     func(dst []uint16, src []float32)
	decode     func(dst []float32, src []uint16)
	decodeRows func(dst []float32, ldd int, src []uint16, lds, rows, cols int)
	gather     func(dst []float32, ldd int, src []uint16, lds, width int, idx []int32)
}

var generic = kernels{level: cpuid.Generic, encode: encodeGeneric, decode: decodeGeneric,
	decodeRows: decodeRowsGeneric, gather: gatherGeneric}

// impl is the kernel set in use, the widest this CPU and build support.
var impl = kernelsFor(cpuid.Detected)

// Kernel names the kernels in use: "avx512", "avx2" or "generic".
func Kernel() string { return impl.level.String() }
