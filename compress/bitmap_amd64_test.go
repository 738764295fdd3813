//go:build !noasm

package compress

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/internal/guardtest"
)

// bitmapRows lays out rows of n values as messages do: each row's bitmap of
// exactly k columns, followed (interleaved, stride rb) or not (bitmaps and
// values apart) by its k values. The buffers end at inaccessible pages.
type bitmapRows struct {
	bitmaps, vals           []byte
	bitmapStride, valStride int
}

func newBitmapRows(t *testing.T, r *rand.Rand, rows, n, k int, interleaved, shared bool) bitmapRows {
	mb := (n + 7) / 8
	var b bitmapRows
	if interleaved {
		rb := mb + 4*k
		buf := guardtest.Bytes(t, rows*rb)
		b = bitmapRows{bitmaps: buf, vals: buf[mb:], bitmapStride: rb, valStride: rb}
	} else {
		b = bitmapRows{bitmaps: guardtest.Bytes(t, mb), vals: guardtest.Bytes(t, rows*4*k), valStride: 4 * k}
		if !shared {
			b.bitmaps, b.bitmapStride = guardtest.Bytes(t, rows*mb), mb
		}
	}
	for i := range rows {
		if i == 0 || b.bitmapStride != 0 {
			bm := b.bitmaps[i*b.bitmapStride : i*b.bitmapStride+mb]
			clear(bm)
			for _, j := range r.Perm(n)[:k] {
				bm[j/8] |= 1 << (j % 8)
			}
		}
		v := b.vals[i*b.valStride : i*b.valStride+4*k]
		for p := range k {
			x := float32(r.NormFloat64())
			switch p % 7 {
			case 3:
				x = float32(math.Inf(1))
			case 5:
				x = float32(math.Copysign(0, -1))
			case 6:
				x = float32(math.NaN())
			}
			putFloat(v[4*p:], x)
		}
	}
	return b
}

func putFloat(b []byte, x float32) {
	u := math.Float32bits(x)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

// The row kernels write what their Go twins write, bit for bit, read and
// write nothing past their buffers (which end at inaccessible pages), and
// reject the same bad bitmap rows.
func TestBitmapRowKernelsMatchGo(t *testing.T) {
	if !bitmapAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	r := rand.New(rand.NewPCG(31, 32))
	for n := 1; n <= 130; n++ {
		for _, rows := range []int{1, 2, 5} {
			for _, layout := range []struct{ interleaved, shared bool }{{true, false}, {false, false}, {false, true}} {
				k := r.IntN(n + 1)
				b := newBitmapRows(t, r, rows, n, k, layout.interleaved, layout.shared)
				scales := []float32{1, 2.5, -1, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN())}
				scale := scales[r.IntN(len(scales))]
				var outs [2][]float32
				for i, kernel := range []func([]float32, []byte, int, []byte, int, int, int, int, float32) int{unpackRowsGo, unpackRows} {
					outs[i] = guardtest.Float32s(t, rows*n)
					for j := range outs[i] {
						outs[i][j] = float32(math.NaN())
					}
					if bad := kernel(outs[i], b.bitmaps, b.bitmapStride, b.vals, b.valStride, rows, n, k, scale); bad != -1 {
						t.Fatalf("n=%d rows=%d k=%d %+v: row %d rejected", n, rows, k, layout, bad)
					}
				}
				if j := differentBits(outs[0], outs[1]); j >= 0 {
					t.Fatalf("n=%d rows=%d k=%d %+v: value %d unpacks to %v, Go %v", n, rows, k, layout, j, outs[1][j], outs[0][j])
				}
				// Packing the unpacked rows gives back the values (unscaled).
				if scale == 1 {
					var packed [2][]byte
					for i, kernel := range []func([]byte, int, []uint32, int, int, []byte, int, int) int{packRowsGo, packRows} {
						packed[i] = guardtest.Bytes(t, rows*4*k)
						for j := range packed[i] {
							packed[i][j] = 0xa5
						}
						if bad := kernel(packed[i], 4*k, float32Bits(outs[0]), rows, n, b.bitmaps, b.bitmapStride, k); bad != -1 {
							t.Fatalf("n=%d rows=%d k=%d %+v: row %d rejected by pack", n, rows, k, layout, bad)
						}
					}
					if !slices.Equal(packed[0], packed[1]) {
						t.Fatalf("n=%d rows=%d k=%d %+v: the kernel packs differently", n, rows, k, layout)
					}
					for i := range rows {
						if got, want := packed[1][4*k*i:4*k*(i+1)], b.vals[i*b.valStride:i*b.valStride+4*k]; !slices.Equal(got, want) {
							t.Fatalf("n=%d rows=%d k=%d %+v: row %d packs to other values", n, rows, k, layout, i)
						}
					}
				}
				if layout.shared {
					if k == n {
						continue
					}
					// A bad shared bitmap makes every row bad: row 0 is reported.
					j := slices.IndexFunc(b.bitmaps[:(n+7)/8], func(c byte) bool { return c != 0xff })
					b.bitmaps[j] |= b.bitmaps[j] + 1 // one more column, below n unless past it
					for i, kernel := range []func([]float32, []byte, int, []byte, int, int, int, int, float32) int{unpackRowsGo, unpackRows} {
						if got := kernel(outs[i], b.bitmaps, 0, b.vals, b.valStride, rows, n, k, scale); got != 0 {
							t.Fatalf("n=%d rows=%d k=%d shared: bad bitmap reported at row %d (kernel %d)", n, rows, k, got, i)
						}
					}
					continue
				}
				// A bad row: one column too many or too few, or a column
				// past n.
				bad := r.IntN(rows)
				bm := b.bitmaps[bad*b.bitmapStride : bad*b.bitmapStride+(n+7)/8]
				if n%8 != 0 && k > 0 && r.IntN(2) == 0 {
					// k columns still, but one of them past n.
					bm[len(bm)-1] |= 0x80
					j := slices.IndexFunc(bm, func(c byte) bool { return c != 0 })
					bm[j] &= bm[j] - 1 // a column below n: 0x80 is the highest bit
				} else {
					j := r.IntN(n)
					bm[j/8] ^= 1 << (j % 8)
				}
				for i, kernel := range []func([]float32, []byte, int, []byte, int, int, int, int, float32) int{unpackRowsGo, unpackRows} {
					if got := kernel(outs[i], b.bitmaps, b.bitmapStride, b.vals, b.valStride, rows, n, k, scale); got != bad {
						t.Fatalf("n=%d rows=%d k=%d %+v: bad row %d reported as %d by unpack (kernel %d)", n, rows, k, layout, bad, got, i)
					}
				}
				for i, kernel := range []func([]byte, int, []uint32, int, int, []byte, int, int) int{packRowsGo, packRows} {
					out := guardtest.Bytes(t, rows*4*k)
					if got := kernel(out, 4*k, float32Bits(outs[0]), rows, n, b.bitmaps, b.bitmapStride, k); got != bad {
						t.Fatalf("n=%d rows=%d k=%d %+v: bad row %d reported as %d by pack (kernel %d)", n, rows, k, layout, bad, got, i)
					}
				}
			}
		}
	}
}

// Rows of no columns, or no rows: nothing to do, and a row is bad if it
// should have named columns.
func TestBitmapRowsEmpty(t *testing.T) {
	for _, c := range []struct{ rows, n, k, want int }{{0, 5, 2, -1}, {0, 0, 0, -1}, {3, 0, 0, -1}, {3, 0, 1, 0}} {
		if got := unpackRows(nil, nil, 0, nil, 0, c.rows, c.n, c.k, 1); got != c.want {
			t.Errorf("unpackRows(rows %d, n %d, k %d) = %d, want %d", c.rows, c.n, c.k, got, c.want)
		}
		if got := packRows(nil, 0, nil, c.rows, c.n, nil, 0, c.k); got != c.want {
			t.Errorf("packRows(rows %d, n %d, k %d) = %d, want %d", c.rows, c.n, c.k, got, c.want)
		}
	}
}

// differentBits returns the first index where a and b differ in bits, or −1.
func differentBits(a, b []float32) int {
	for j := range a {
		if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
			return j
		}
	}
	return -1
}
