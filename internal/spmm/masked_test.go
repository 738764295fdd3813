package spmm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/graft-gnn/graft/internal/dropmask"
	"github.com/graft-gnn/graft/internal/guardtest"
	"github.com/graft-gnn/graft/internal/sysstat"
)

// maskedCase is a batch of nb input rows lying at rows ids of x (xRows ×
// ldx), their keep bits, and a product m over the batch's rows: op's
// columns are batch rows; at is op with its columns renumbered to x's
// rows, and its Mask the batch rows' bits.
type maskedCase struct {
	op, at csr
	ids    []int32
	x      []float32
	ldx    int
	mask   Mask
	key    uint64
	thr    int32
}

func newMaskedCase(rng *rand.Rand, op csr, xRows, ldx, width int, p float64, scale float32) maskedCase {
	c := maskedCase{op: op, ldx: ldx, key: rng.Uint64(), thr: dropmask.Threshold(p)}
	c.ids = make([]int32, op.cols)
	for k := range c.ids {
		c.ids[k] = int32(rng.IntN(xRows))
	}
	c.x = randomDense(rng, xRows, ldx)
	if len(c.x) > 7 {
		c.x[3], c.x[7] = float32(math.Copysign(0, -1)), float32(math.Inf(1))
	}
	c.at = op
	c.at.indices = make([]int32, len(op.indices))
	for p, j := range op.indices {
		c.at.indices[p] = c.ids[j]
	}
	stride := dropmask.Words(width) + rng.IntN(2)
	c.mask = Mask{Bits: make([]uint64, op.cols*stride), Stride: stride, Rows: op.indices, Scale: scale}
	for k := range op.cols {
		dropmask.KeepBits(c.mask.Bits[k*stride:], width, c.key, uint64(k)+1000, c.thr)
	}
	return c
}

// dropped returns the batch's rows copied and dropped by dropmask.Apply, as
// the copying path computes them.
func (c maskedCase) dropped(width int) []float32 {
	d := make([]float32, len(c.ids)*width)
	for k, v := range c.ids {
		dropmask.Apply(d[k*width:(k+1)*width], c.x[int(v)*c.ldx:][:width], c.key, uint64(k)+1000, c.thr, c.mask.Scale)
	}
	return d
}

// sameBits fails unless got and want hold the same bits.
func sameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", name, i, got[i], want[i])
		}
	}
}

// TestMulCSRMaskedMatchesCopy checks MulCSRMasked at every level against
// MulCSR at the same level on the batch's rows copied and dropped by
// dropmask.Apply, bit for bit: widths 1–300, accumulating or not, with
// and without values, padded strides, every drop rate's end.
func TestMulCSRMaskedMatchesCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, l := range levels() {
		useLevel(t, l)
		for width := 1; width <= 300; width++ {
			values := width%2 == 0
			op := randomCSR(rng, 23, 40, 9, 5, 70, values)
			p := []float64{0, 0.1, 0.5, 0.9, 1}[width%5]
			scale := float32(1 / (1 - math.Min(p, 0.5)))
			extra := width % 3
			c := newMaskedCase(rng, op, 60, width+extra, width, p, scale)
			d := c.dropped(width)
			for _, acc := range []bool{false, true} {
				ldy := width + extra
				y0 := randomDense(rng, op.rows, ldy)
				want := append([]float32(nil), y0...)
				MulCSR(op.rows, op.offsets, op.indices, op.values, d, width, width, want, ldy, acc)
				got := append([]float32(nil), y0...)
				MulCSRMasked(op.rows, c.at.offsets, c.at.indices, c.at.values, c.x, c.ldx, width, c.mask, got, ldy, acc)
				sameBits(t, fmt.Sprintf("%v width %d p %v acc %v values %v", l, width, p, acc, values), got, want)
			}
		}
	}
}

// TestMaskedKernelsAgree checks every level's masked kernels (near and
// far) against the pure-Go twin bit for bit, on values whose products are
// exact (so that a fused multiply-add rounds as the twin's two
// operations), and against the twin within rounding on any values.
func TestMaskedKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, l := range levels() {
		k := kernelsFor(l)
		for width := 1; width <= 300; width++ {
			op := randomCSR(rng, 20, 30, 9, 4, 60, true)
			exact := width%2 == 0
			if exact {
				for i := range op.values {
					op.values[i] = []float32{0.5, -1, 2, 0.25}[i%4]
				}
			}
			c := newMaskedCase(rng, op, 50, width, width, 0.5, 2)
			for _, acc := range []bool{false, true} {
				y0 := randomDense(rng, op.rows, width)
				want := append([]float32(nil), y0...)
				mulRowsMaskedGeneric(c.at.offsets, c.at.indices, c.at.values, c.x, width, width, want, width, acc, c.mask.Bits, c.mask.Rows, 8*c.mask.Stride, 2)
				for far, kernel := range k.rowsMasked {
					got := append([]float32(nil), y0...)
					kernel(c.at.offsets, c.at.indices, c.at.values, c.x, width, width, got, width, acc, c.mask.Bits, c.mask.Rows, 8*c.mask.Stride, 2)
					name := fmt.Sprintf("%v far %d width %d acc %v", l, far, width, acc)
					if exact {
						sameBits(t, name, got, want)
						continue
					}
					for i := range want {
						if got[i] == want[i] || math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i])) {
							continue
						}
						if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
							t.Fatalf("%s: [%d] = %v, twin %v", name, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestMulCSRMaskedGuardPage: x and the keep bits end at an inaccessible
// page, and the last row is gathered at every width, so the blocks and
// the masked tail must read nothing past the row or its bits.
func TestMulCSRMaskedGuardPage(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		for width := 1; width <= 160; width++ {
			const rows = 3
			x := guardtest.Float32s(t, rows*width)
			for i := range x {
				x[i] = 1
			}
			w := dropmask.Words(width)
			b := guardtest.Float32s(t, 2*rows*w)
			bits := unsafeWords(b)
			for i := range bits {
				bits[i] = ^uint64(0)
			}
			y := guardtest.Float32s(t, width)
			m := Mask{Bits: bits, Stride: w, Rows: []int32{rows - 1, rows - 1}, Scale: 2}
			MulCSRMasked(1, []int64{0, 2}, []int32{rows - 1, rows - 1}, []float32{0.5, 0.25}, x, width, width, m, y, width, false)
			for k, v := range y {
				if v != 1.5 {
					t.Fatalf("%v width %d: y[%d] = %v, want 1.5", l, width, k, v)
				}
			}
		}
	}
}

func TestMulCSRMaskedBadInputPanics(t *testing.T) {
	bits := make([]uint64, 4)
	for _, tc := range []struct {
		name  string
		width int
		m     Mask
		want  string
	}{
		{"bits row outside", 2, Mask{Bits: bits, Stride: 2, Rows: []int32{0, 2}, Scale: 1}, "row 1 gathers a row of keep bits outside the mask's 2 rows"},
		{"negative bits row", 2, Mask{Bits: bits, Stride: 1, Rows: []int32{-1, 0}, Scale: 1}, "row 0 gathers a row of keep bits outside"},
		{"too few rows", 2, Mask{Bits: bits, Stride: 1, Rows: []int32{0}, Scale: 1}, "mask of stride 1 and 1 rows"},
		{"zero stride", 2, Mask{Bits: bits, Stride: 0, Rows: []int32{0, 1}, Scale: 1}, "mask of stride 0"},
		{"stride short of the width", 65, Mask{Bits: bits, Stride: 1, Rows: []int32{0, 1}, Scale: 1}, "mask of stride 1 and 2 rows for width 65"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("%s: recovered %v, want a panic saying %q", tc.name, r, tc.want)
				}
			}()
			x, y := make([]float32, 4*tc.width), make([]float32, 2*tc.width)
			MulCSRMasked(2, []int64{0, 1, 2}, []int32{0, 3}, nil, x, tc.width, tc.width, tc.m, y, tc.width, false)
		}()
	}
}

func TestMulCSRMaskedNoAllocations(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	op := randomCSR(rng, 300, 200, 10, -1, 0, true)
	c := newMaskedCase(rng, op, 400, 100, 100, 0.5, 2)
	y := make([]float32, op.rows*100)
	for _, l := range levels() {
		useLevel(t, l)
		run := func() {
			MulCSRMasked(op.rows, c.at.offsets, c.at.indices, c.at.values, c.x, 100, 100, c.mask, y, 100, false)
		}
		run()
		if a := testing.AllocsPerRun(20, run); a != 0 {
			t.Errorf("%v: %v allocations per MulCSRMasked", l, a)
		}
	}
}

// BenchmarkMulCSRMasked times, at every level, a dropped product of a
// batch of input rows lying in a larger matrix, two ways: masked,
// MulCSRMasked gathering the rows where they lie after computing their
// keep bits; copied, the rows copied and dropped by dropmask.Apply and
// then multiplied by MulCSR. The shape is a quarter of a products-sized
// first layer: 150,000 rows of 100 features in a matrix of 600,000, and
// 20,000 output rows of 15 nonzeros.
func BenchmarkMulCSRMasked(b *testing.B) {
	const xRows, batch, out, width = 600_000, 150_000, 20_000, 100
	rng := rand.New(rand.NewPCG(17, 18))
	op := randomCSR(rng, out, batch, 30, -1, 0, true)
	c := newMaskedCase(rng, op, xRows, width, width, 0.5, 2)
	y := make([]float32, out*width)
	d := make([]float32, batch*width)
	for _, l := range levels() {
		useLevel(b, l)
		b.Run(l.String()+"/masked", func(b *testing.B) {
			for b.Loop() {
				for k := range c.ids {
					dropmask.KeepBits(c.mask.Bits[k*c.mask.Stride:], width, c.key, uint64(k), c.thr)
				}
				MulCSRMasked(out, c.at.offsets, c.at.indices, c.at.values, c.x, width, width, c.mask, y, width, false)
			}
		})
		b.Run(l.String()+"/copied", func(b *testing.B) {
			for b.Loop() {
				for k, v := range c.ids {
					dropmask.Apply(d[k*width:(k+1)*width], c.x[int(v)*width:][:width], c.key, uint64(k), c.thr, 2)
				}
				MulCSR(out, op.offsets, op.indices, op.values, d, width, width, y, width, false)
			}
		})
	}
}

// unsafeWords views f's storage as uint64 words.
func unsafeWords(f []float32) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(f))), len(f)/2)
}

// BenchmarkMaskedKernelOneCore runs a level's far row kernel and its
// masked twin on one thread, alternated call by call, over the same
// gathered rows (900,000 nonzeros gathering rows of 100 floats from
// 600,000, as a quarter of a products-sized first layer), and reports
// masked-cost: the median over pairs of the masked kernel's CPU time over
// the plain one's, the price of the keep bits alone.
func BenchmarkMaskedKernelOneCore(b *testing.B) {
	const xRows, batch, out, width = 600_000, 400_000, 60_000, 100
	rng := rand.New(rand.NewPCG(17, 18))
	op := randomCSR(rng, out, batch, 30, -1, 0, true)
	c := newMaskedCase(rng, op, xRows, width, width, 0.5, 2)
	y := make([]float32, out*width)
	for _, l := range levels() {
		b.Run(l.String(), func(b *testing.B) {
			k := kernelsFor(l)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var ratios []float64
			for b.Loop() {
				c0 := sysstat.CPUTime()
				k.rows[1][0](c.at.offsets, c.at.indices, c.at.values, c.x, width, width, y, width, false)
				c1 := sysstat.CPUTime()
				k.rowsMasked[1](c.at.offsets, c.at.indices, c.at.values, c.x, width, width, y, width, false, c.mask.Bits, c.mask.Rows, 8*c.mask.Stride, 2)
				c2 := sysstat.CPUTime()
				if c1 > c0 && c2 > c1 {
					ratios = append(ratios, float64(c2-c1)/float64(c1-c0))
				}
			}
			if len(ratios) > 0 {
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "masked-cost")
			}
		})
	}
}
