package spmm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/guardtest"
)

// toBF16 rounds a dense matrix to bfloat16 and returns it with its exact
// float32 widening, which the float64 reference reads.
func toBF16(x []float32) ([]uint16, []float32) {
	h := make([]uint16, len(x))
	bf16.Encode(h, x)
	w := make([]float32, len(x))
	bf16.Decode(w, h)
	return h, w
}

// TestMulCSRBF16 checks MulCSRBF16 at every level against the float64
// product of the widened x, at widths that take every block and the
// masked tail, with strides and padding, accumulating or not.
func TestMulCSRBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	widths := []int{1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 143, 144, 255, 256, 257, 300}
	for _, l := range levels() {
		useLevel(t, l)
		for _, tc := range []struct {
			rows, cols, maxDeg, heavyDeg int
			values                       bool
		}{
			{0, 5, 3, 0, true},
			{1, 1, 1, 0, false},
			{9, 13, 4, 0, true},
			{40, 30, 6, 500, true},
			{300, 400, 10, 2000, false},
		} {
			m := randomCSR(rng, tc.rows, tc.cols, tc.maxDeg, tc.rows/2, tc.heavyDeg, tc.values)
			for _, width := range widths {
				for _, extra := range []int{0, 5} {
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("%v/rows=%d/width=%d/ld+%d/acc=%v/values=%v", l, tc.rows, width, extra, acc, tc.values)
						ldx, ldy := width+extra, width+2*extra
						xb, xw := toBF16(randomDense(rng, tc.cols, ldx))
						y := randomDense(rng, tc.rows, ldy)
						const pad = 42
						for i := 0; i < tc.rows; i++ {
							for k := width; k < ldy; k++ {
								y[i*ldy+k] = pad
							}
						}
						want, scale := reference(m, xw, ldx, width, y, ldy, acc)
						MulCSRBF16(tc.rows, m.offsets, m.indices, m.values, xb[:max(0, len(xb)-extra)], ldx, width, y, ldy, acc)
						check(t, name, y, want, scale, tc.rows, width, ldy, pad)
					}
				}
			}
		}
	}
}

// TestBF16KernelsAgree runs the bf16 row kernels directly against the
// pure-Go twin (not bit for bit: the assembly fuses the multiply-add), and
// every far and streaming variant against the plain kernel, bit for bit.
func TestBF16KernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	m := randomCSR(rng, 64, 80, 9, 5, 200, true)
	for _, l := range levels() {
		k := kernelsFor(l)
		for width := 1; width <= 300; width++ {
			x, _ := toBF16(randomDense(rng, m.cols, width))
			y0 := randomDense(rng, m.rows, width)
			for _, acc := range []bool{true, false} {
				want := append([]float32(nil), y0...)
				generic.rowsBF16[0][0](m.offsets, m.indices, m.values, x, width, width, want, width, acc)
				variants := func(i int, y []float32, ld int) {
					k.rowsBF16[i/2][i%2](m.offsets, m.indices, m.values, x, width, width, y, ld, acc)
				}
				plain := agreeVariants(t, fmt.Sprintf("bf16 %v width %d accumulate %v", l, width, acc), y0, m.rows, width, variants)
				for i := range plain {
					if d := math.Abs(float64(plain[i] - want[i])); d > 1e-4 {
						t.Fatalf("%v width %d: bf16 rows kernel [%d] = %v, generic %v", l, width, i, plain[i], want[i])
					}
				}
			}
		}
	}
}

// TestBF16KernelsMatchFloat32 runs every bf16 row kernel against the
// float32 row kernel of its level and variant on the exactly widened x:
// each column of y takes the same multiply-adds in the same order, so the
// results must agree bit for bit, whatever order the bf16 kernel keeps its
// columns in between (the AVX-512 blocks split even and odd columns). The
// widths take every block of 128, 32 and 16 columns and the masked tail,
// each alone and after the others; the matrix has empty rows and a long
// one; y is strided, and its padding must be kept.
func TestBF16KernelsMatchFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	m := randomCSR(rng, 48, 70, 7, 4, 150, true)
	for _, l := range levels() {
		k := kernelsFor(l)
		for width := 1; width <= 300; width++ {
			if width > 180 && width%16 != 0 && width%16 != 15 && width%16 != 1 {
				continue
			}
			const ldPad, pad = 3, 777
			ldx, ldy := width+ldPad, (width+15)/16*16+16 // aligned, for the streaming stores
			xb, xw := toBF16(randomDense(rng, m.cols, ldx))
			y0 := randomDense(rng, m.rows, ldy)
			for r := range m.rows {
				for c := width; c < ldy; c++ {
					y0[r*ldy+c] = pad
				}
			}
			for _, acc := range []bool{false, true} {
				for v := range 4 {
					far, stream := v/2, v%2
					want := append([]float32(nil), y0...)
					k.rows[far][stream](m.offsets, m.indices, m.values, xw, ldx, width, want, ldy, acc)
					got := alignedFloats(len(y0))
					copy(got, y0)
					k.rowsBF16[far][stream](m.offsets, m.indices, m.values, xb, ldx, width, got, ldy, acc)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v width %d accumulate %v [far %d][stream %d]: y[%d,%d] = %v, float32 kernel %v",
								l, width, acc, far, stream, i/ldy, i%ldy, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

func TestMulCSRBF16BadInputPanics(t *testing.T) {
	offsets := []int64{0, 2, 1}
	x := make([]uint16, 4*2)
	y := make([]float32, 2*2)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"index out of range", func() { MulCSRBF16(1, offsets, []int32{0, 5}, nil, x, 2, 2, y, 2, false) }},
		{"decreasing offsets", func() { MulCSRBF16(2, offsets, []int32{0, 1}, nil, x, 2, 2, y, 2, false) }},
		{"short y", func() { MulCSRBF16(1, offsets, []int32{0, 1}, nil, x, 2, 2, y[:1], 2, false) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

func TestMulCSRBF16NoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	m := randomCSR(rng, 20000, 20000, 10, 3, 100, true)
	const width = 64
	x, _ := toBF16(randomDense(rng, m.cols, width))
	y := make([]float32, m.rows*width)
	f := func() { MulCSRBF16(m.rows, m.offsets, m.indices, m.values, x, width, width, y, width, false) }
	f()
	if a := testing.AllocsPerRun(20, f); a != 0 {
		t.Errorf("%v allocations per call, want 0", a)
	}
}

// TestMulCSRBF16GuardPage: x ends at an inaccessible page, and the last
// row is gathered at every width, so the blocks and the masked tail must
// read nothing past the row.
func TestMulCSRBF16GuardPage(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		for width := 1; width <= 160; width++ {
			const rows = 3
			x := guardtest.Uint16s(t, rows*width)
			for i := range x {
				x[i] = 0x3f80 // 1
			}
			offsets := []int64{0, 2}
			indices := []int32{rows - 1, rows - 1}
			y := guardtest.Float32s(t, width)
			MulCSRBF16(1, offsets, indices, []float32{0.5, 0.25}, x, width, width, y, width, false)
			for k, v := range y {
				if v != 0.75 {
					t.Fatalf("%v width %d: y[%d] = %v, want 0.75", l, width, k, v)
				}
			}
		}
	}
}
