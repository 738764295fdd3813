package spmm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/dropmask"
	"github.com/graft-gnn/graft/internal/guardtest"
	"github.com/graft-gnn/graft/internal/sysstat"
)

// maskedCaseBF16 is a maskedCase whose x is held in bfloat16: xb, with
// c.x its exact widening.
type maskedCaseBF16 struct {
	maskedCase
	xb []uint16
}

func newMaskedCaseBF16(rng *rand.Rand, op csr, xRows, ldx, width int, p float64, scale float32) maskedCaseBF16 {
	c := maskedCaseBF16{maskedCase: newMaskedCase(rng, op, xRows, ldx, width, p, scale)}
	c.xb, c.x = toBF16(c.x)
	return c
}

// dropped returns the batch's rows widened by bf16.Gather and dropped by
// dropmask.Apply, as the copying path computes them.
func (c maskedCaseBF16) dropped(width int) []float32 {
	d := make([]float32, len(c.ids)*width)
	bf16.Gather(d, width, c.xb, c.ldx, width, c.ids)
	for k := range c.ids {
		r := d[k*width : (k+1)*width]
		dropmask.Apply(r, r, c.key, uint64(k)+1000, c.thr, c.mask.Scale)
	}
	return d
}

// TestMulCSRMaskedBF16MatchesCopy checks MulCSRMaskedBF16 at every level
// against MulCSR at the same level on the batch's rows widened, copied
// and dropped, bit for bit: widths 1–300, accumulating or not, with and
// without values, padded strides, every drop rate's end, and -0 and +Inf
// among the rows.
func TestMulCSRMaskedBF16MatchesCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, l := range levels() {
		useLevel(t, l)
		for width := 1; width <= 300; width++ {
			values := width%2 == 0
			op := randomCSR(rng, 23, 40, 9, 5, 70, values)
			p := []float64{0, 0.1, 0.5, 0.9, 1}[width%5]
			scale := float32(1 / (1 - math.Min(p, 0.5)))
			extra := width % 3
			c := newMaskedCaseBF16(rng, op, 60, width+extra, width, p, scale)
			d := c.dropped(width)
			for _, acc := range []bool{false, true} {
				ldy := width + extra
				y0 := randomDense(rng, op.rows, ldy)
				want := append([]float32(nil), y0...)
				MulCSR(op.rows, op.offsets, op.indices, op.values, d, width, width, want, ldy, acc)
				got := append([]float32(nil), y0...)
				MulCSRMaskedBF16(op.rows, c.at.offsets, c.at.indices, c.at.values, c.xb, c.ldx, width, c.mask, got, ldy, acc)
				sameBits(t, fmt.Sprintf("%v width %d p %v acc %v values %v", l, width, p, acc, values), got, want)
			}
		}
	}
}

// TestMaskedBF16KernelsAgree checks every level's bf16 masked kernels:
// the far one against the near one bit for bit, and both against the
// pure-Go twin bit for bit on values whose products are exact, and within
// rounding on any values.
func TestMaskedBF16KernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
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
			c := newMaskedCaseBF16(rng, op, 50, width, width, 0.5, 2)
			for _, acc := range []bool{false, true} {
				y0 := randomDense(rng, op.rows, width)
				want := append([]float32(nil), y0...)
				mulRowsMaskedBF16Generic(c.at.offsets, c.at.indices, c.at.values, c.xb, width, width, want, width, acc, c.mask.Bits, c.mask.Rows, 8*c.mask.Stride, 2)
				var near []float32
				for far, kernel := range k.rowsMaskedBF16 {
					got := append([]float32(nil), y0...)
					kernel(c.at.offsets, c.at.indices, c.at.values, c.xb, width, width, got, width, acc, c.mask.Bits, c.mask.Rows, 8*c.mask.Stride, 2)
					name := fmt.Sprintf("%v far %d width %d acc %v", l, far, width, acc)
					if far == 0 {
						near = got
					} else {
						sameBits(t, name+" against near", got, near)
					}
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

// TestMulCSRMaskedBF16GuardPage: x and the keep bits end at an
// inaccessible page, and the last row is gathered at every width, so the
// blocks and the tails must read nothing past the row or its bits.
func TestMulCSRMaskedBF16GuardPage(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		for width := 1; width <= 160; width++ {
			const rows = 3
			x := guardtest.Uint16s(t, rows*width)
			for i := range x {
				x[i] = 0x3f80 // 1
			}
			w := dropmask.Words(width)
			b := guardtest.Float32s(t, 2*rows*w)
			bits := unsafeWords(b)
			for i := range bits {
				bits[i] = ^uint64(0)
			}
			y := guardtest.Float32s(t, width)
			m := Mask{Bits: bits, Stride: w, Rows: []int32{rows - 1, rows - 1}, Scale: 2}
			MulCSRMaskedBF16(1, []int64{0, 2}, []int32{rows - 1, rows - 1}, []float32{0.5, 0.25}, x, width, width, m, y, width, false)
			for k, v := range y {
				if v != 1.5 {
					t.Fatalf("%v width %d: y[%d] = %v, want 1.5", l, width, k, v)
				}
			}
		}
	}
}

func TestMulCSRMaskedBF16BadInputPanics(t *testing.T) {
	bits := make([]uint64, 4)
	for _, tc := range []struct {
		name  string
		width int
		m     Mask
		want  string
	}{
		{"bits row outside", 2, Mask{Bits: bits, Stride: 2, Rows: []int32{0, 2}, Scale: 1}, "MulCSRMaskedBF16: row 1 gathers a row of keep bits outside the mask's 2 rows"},
		{"negative bits row", 2, Mask{Bits: bits, Stride: 1, Rows: []int32{-1, 0}, Scale: 1}, "MulCSRMaskedBF16: row 0 gathers a row of keep bits outside"},
		{"too few rows", 2, Mask{Bits: bits, Stride: 1, Rows: []int32{0}, Scale: 1}, "MulCSRMaskedBF16: mask of stride 1 and 1 rows"},
		{"zero stride", 2, Mask{Bits: bits, Stride: 0, Rows: []int32{0, 1}, Scale: 1}, "mask of stride 0"},
		{"stride short of the width", 65, Mask{Bits: bits, Stride: 1, Rows: []int32{0, 1}, Scale: 1}, "mask of stride 1 and 2 rows for width 65"},
		{"column outside x", 2, Mask{Bits: bits, Stride: 1, Rows: []int32{0, 1}, Scale: 1}, "MulCSRMaskedBF16: row 1 has decreasing offsets or a column index outside x's 4 rows"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("%s: recovered %v, want a panic saying %q", tc.name, r, tc.want)
				}
			}()
			x, y := make([]uint16, 4*tc.width), make([]float32, 2*tc.width)
			col := int32(3)
			if tc.name == "column outside x" {
				col = 4
			}
			MulCSRMaskedBF16(2, []int64{0, 1, 2}, []int32{0, col}, nil, x, tc.width, tc.width, tc.m, y, tc.width, false)
		}()
	}
}

func TestMulCSRMaskedBF16NoAllocations(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	op := randomCSR(rng, 300, 200, 10, -1, 0, true)
	c := newMaskedCaseBF16(rng, op, 400, 100, 100, 0.5, 2)
	y := make([]float32, op.rows*100)
	for _, l := range levels() {
		useLevel(t, l)
		run := func() {
			MulCSRMaskedBF16(op.rows, c.at.offsets, c.at.indices, c.at.values, c.xb, 100, 100, c.mask, y, 100, false)
		}
		run()
		if a := testing.AllocsPerRun(20, run); a != 0 {
			t.Errorf("%v: %v allocations per MulCSRMaskedBF16", l, a)
		}
	}
}

// BenchmarkMulCSRMaskedBF16 is BenchmarkMulCSRMasked with the matrix in
// bfloat16: masked, MulCSRMaskedBF16 gathering the rows where they lie
// after computing their keep bits; copied, the rows widened by
// bf16.Gather, dropped by dropmask.Apply and multiplied by MulCSR.
func BenchmarkMulCSRMaskedBF16(b *testing.B) {
	const xRows, batch, out, width = 600_000, 150_000, 20_000, 100
	rng := rand.New(rand.NewPCG(17, 18))
	op := randomCSR(rng, out, batch, 30, -1, 0, true)
	c := newMaskedCaseBF16(rng, op, xRows, width, width, 0.5, 2)
	y := make([]float32, out*width)
	d := make([]float32, batch*width)
	for _, l := range levels() {
		useLevel(b, l)
		b.Run(l.String()+"/masked", func(b *testing.B) {
			for b.Loop() {
				for k := range c.ids {
					dropmask.KeepBits(c.mask.Bits[k*c.mask.Stride:], width, c.key, uint64(k), c.thr)
				}
				MulCSRMaskedBF16(out, c.at.offsets, c.at.indices, c.at.values, c.xb, width, width, c.mask, y, width, false)
			}
		})
		b.Run(l.String()+"/copied", func(b *testing.B) {
			for b.Loop() {
				bf16.Gather(d, width, c.xb, width, width, c.ids)
				for k := range c.ids {
					r := d[k*width : (k+1)*width]
					dropmask.Apply(r, r, c.key, uint64(k), c.thr, 2)
				}
				MulCSR(out, op.offsets, op.indices, op.values, d, width, width, y, width, false)
			}
		})
	}
}

// BenchmarkMaskedBF16KernelOneCore is BenchmarkMaskedKernelOneCore on
// bf16 rows, for the near kernels and the far ones: a level's bf16 row
// kernel and its masked twin on one thread, alternated call by call, over
// the same gathered rows, reporting masked-cost, the median over pairs of
// the masked kernel's CPU time over the plain one's.
func BenchmarkMaskedBF16KernelOneCore(b *testing.B) {
	const xRows, batch, out, width = 600_000, 400_000, 60_000, 100
	rng := rand.New(rand.NewPCG(17, 18))
	op := randomCSR(rng, out, batch, 30, -1, 0, true)
	c := newMaskedCaseBF16(rng, op, xRows, width, width, 0.5, 2)
	y := make([]float32, out*width)
	for _, l := range levels() {
		for far, name := range []string{"near", "far"} {
			b.Run(l.String()+"/"+name, func(b *testing.B) {
				k := kernelsFor(l)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var ratios []float64
				for b.Loop() {
					c0 := sysstat.CPUTime()
					k.rowsBF16[far][0](c.at.offsets, c.at.indices, c.at.values, c.xb, width, width, y, width, false)
					c1 := sysstat.CPUTime()
					k.rowsMaskedBF16[far](c.at.offsets, c.at.indices, c.at.values, c.xb, width, width, y, width, false, c.mask.Bits, c.mask.Rows, 8*c.mask.Stride, 2)
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
}
