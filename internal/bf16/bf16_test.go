package bf16

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/cpuid"
	"github.com/graft-gnn/graft/internal/guardtest"
)

// magnitude is |h| in float64, reading the Inf pattern as 2^128, the next
// step above the largest finite bfloat16, as round-to-nearest treats it.
func magnitude(h uint16) float64 {
	h &= 0x7fff
	if h == 0x7f80 {
		return math.Ldexp(1, 128)
	}
	return float64(ToFloat32(h))
}

// reference rounds f to bfloat16 in float64 arithmetic: the nearer of the
// two bfloat16s around f, the even one on a tie.
func reference(f float32) uint16 {
	b := math.Float32bits(f)
	if math.IsNaN(float64(f)) {
		return 0 // checked separately
	}
	sign := uint16(b>>16) & 0x8000
	if math.IsInf(float64(f), 0) {
		return sign | 0x7f80
	}
	lo := uint16(b>>16) & 0x7fff // truncated toward zero
	hi := lo + 1
	x := math.Abs(float64(f))
	dlo, dhi := x-magnitude(lo), magnitude(hi)-x
	switch {
	case dlo < dhi, dlo == dhi && lo&1 == 0:
		return sign | lo
	}
	return sign | hi
}

// interesting returns every bfloat16's float32 value, the midpoints to the
// next one (ties), a float32 ulp either side of those, plus random bits.
func interesting() []float32 {
	var fs []float32
	for h := 0; h < 1<<16; h++ {
		b := uint32(h) << 16
		for _, d := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff} {
			fs = append(fs, math.Float32frombits(b|d))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 16 {
		fs = append(fs, math.Float32frombits(rng.Uint32()))
	}
	return fs
}

func TestFromFloat32(t *testing.T) {
	for _, f := range interesting() {
		got := FromFloat32(f)
		if f != f {
			b := math.Float32bits(f)
			if g := ToFloat32(got); g == g || got&0x40 == 0 || got&0x8000 != uint16(b>>16)&0x8000 {
				t.Fatalf("FromFloat32(NaN %#08x) = %#04x, want a quiet NaN of the same sign", b, got)
			}
			continue
		}
		if want := reference(f); got != want {
			t.Fatalf("FromFloat32(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
}

// Widening is exact: every bfloat16 widens to the float32 with its bits on
// top, and rounding that back is the identity (NaNs aside).
func TestToFloat32RoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := ToFloat32(uint16(h))
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("ToFloat32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		if f == f && FromFloat32(f) != uint16(h) {
			t.Fatalf("FromFloat32(ToFloat32(%#04x)) = %#04x", h, FromFloat32(f))
		}
	}
}

// levels lists every kernel level this CPU and build can run.
func levels() []cpuid.Level {
	var ls []cpuid.Level
	for _, l := range []cpuid.Level{cpuid.AVX512, cpuid.AVX2, cpuid.Generic} {
		if l <= cpuid.Detected && kernelsFor(l).level == l {
			ls = append(ls, l)
		}
	}
	return ls
}

func useLevel(t testing.TB, l cpuid.Level) {
	saved := impl
	impl = kernelsFor(l)
	t.Cleanup(func() { impl = saved })
}

// TestBulk checks Encode and Decode at every level against the scalar
// conversions, at every length up to 100 and on all interesting values,
// leaving the elements past the end alone.
func TestBulk(t *testing.T) {
	all := interesting()
	for _, l := range levels() {
		t.Run(l.String(), func(t *testing.T) {
			useLevel(t, l)
			for n := 0; n <= 100; n++ {
				checkBulk(t, all[1000:1000+n])
			}
			checkBulk(t, all)
		})
	}
}

func checkBulk(t *testing.T, src []float32) {
	t.Helper()
	dst := make([]uint16, len(src)+3)
	for i := range dst {
		dst[i] = 0xabcd
	}
	Encode(dst, src)
	for i, f := range src {
		if want := FromFloat32(f); dst[i] != want {
			t.Fatalf("n=%d: Encode [%d] (%#08x) = %#04x, want %#04x", len(src), i, math.Float32bits(f), dst[i], want)
		}
	}
	for _, h := range dst[len(src):] {
		if h != 0xabcd {
			t.Fatalf("n=%d: Encode wrote past the end", len(src))
		}
	}
	back := make([]float32, len(src)+3)
	back[len(src)] = 7
	Decode(back, dst[:len(src)])
	for i, h := range dst[:len(src)] {
		if math.Float32bits(back[i]) != uint32(h)<<16 {
			t.Fatalf("n=%d: Decode [%d] (%#04x) = %#08x", len(src), i, h, math.Float32bits(back[i]))
		}
	}
	if back[len(src)] != 7 {
		t.Fatalf("n=%d: Decode wrote past the end", len(src))
	}
}

// TestDecodeRows checks DecodeRows at every level against the scalar
// widening, over widths on both sides of the 8- and 16-value steps and
// strides past the width, leaving the gaps between rows alone.
func TestDecodeRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, l := range levels() {
		useLevel(t, l)
		for rows := 1; rows <= 4; rows++ {
			for cols := 0; cols <= 40; cols++ {
				ldd, lds := cols+rng.IntN(3), cols+rng.IntN(3)
				src := make([]uint16, (rows-1)*lds+cols)
				for i := range src {
					src[i] = uint16(rng.Uint32())
				}
				dst := make([]float32, (rows-1)*ldd+cols+1)
				for i := range dst {
					dst[i] = -1
				}
				DecodeRows(dst, ldd, src, lds, rows, cols)
				for i, v := range dst {
					r, c := i/max(ldd, 1), i%max(ldd, 1)
					want := uint32(0xbf800000) // -1, untouched
					if r < rows && c < cols && ldd > 0 {
						want = uint32(src[r*lds+c]) << 16
					}
					if math.Float32bits(v) != want {
						t.Fatalf("%v %d×%d ldd=%d lds=%d: dst[%d] = %#08x, want %#08x", l, rows, cols, ldd, lds, i, math.Float32bits(v), want)
					}
				}
			}
		}
	}
}

func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range levels() {
		useLevel(t, l)
		for _, width := range []int{1, 15, 16, 17, 100, 128} {
			lds, ldd := width+3, width+1
			rows := 50
			src := make([]uint16, (rows-1)*lds+width)
			for i := range src {
				src[i] = uint16(rng.Uint32())
			}
			idx := make([]int32, 37)
			for i := range idx {
				idx[i] = int32(rng.IntN(rows))
			}
			idx[0] = int32(rows - 1) // the last row, which ends the slice
			dst := make([]float32, (len(idx)-1)*ldd+width)
			Gather(dst, ldd, src, lds, width, idx)
			got16 := make([]uint16, len(dst))
			GatherBF16(got16, ldd, src, lds, width, idx)
			for i, r := range idx {
				for j := 0; j < width; j++ {
					h := src[int(r)*lds+j]
					if math.Float32bits(dst[i*ldd+j]) != uint32(h)<<16 || got16[i*ldd+j] != h {
						t.Fatalf("%v width %d: row %d col %d wrong", l, width, i, j)
					}
				}
			}
		}
	}
}

func TestGatherPanicsOnBadIndex(t *testing.T) {
	for _, f := range []func(){
		func() { Gather(make([]float32, 4), 4, make([]uint16, 8), 4, 4, []int32{2}) },
		func() { GatherBF16(make([]uint16, 4), 4, make([]uint16, 8), 4, 4, []int32{-1}) },
		func() { Gather(make([]float32, 3), 4, make([]uint16, 8), 4, 4, []int32{0}) },
		func() { DecodeRows(make([]float32, 7), 4, make([]uint16, 8), 4, 2, 4) },
		func() { DecodeRows(make([]float32, 8), 4, make([]uint16, 7), 4, 2, 4) },
		func() { DecodeRows(make([]float32, 8), 3, make([]uint16, 8), 4, 2, 4) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

func BenchmarkEncode(b *testing.B) {
	src := make([]float32, 1<<20)
	for i := range src {
		src[i] = float32(i) * 0.37
	}
	dst := make([]uint16, len(src))
	for _, l := range levels() {
		b.Run(l.String(), func(b *testing.B) {
			useLevel(b, l)
			b.SetBytes(6 << 20)
			for b.Loop() {
				Encode(dst, src)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	src := make([]uint16, 1<<20)
	for i := range src {
		src[i] = uint16(i * 0x9e37)
	}
	dst := make([]float32, len(src))
	for _, l := range levels() {
		b.Run(l.String(), func(b *testing.B) {
			useLevel(b, l)
			b.SetBytes(6 << 20)
			for b.Loop() {
				Decode(dst, src)
			}
		})
	}
}

func BenchmarkGather(b *testing.B) {
	const rows, width = 1 << 20, 128
	src := make([]uint16, rows*width)
	idx := make([]int32, 1<<14)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range idx {
		idx[i] = int32(rng.IntN(rows))
	}
	dst := make([]float32, len(idx)*width)
	for _, l := range levels() {
		b.Run(l.String(), func(b *testing.B) {
			useLevel(b, l)
			b.SetBytes(int64(len(idx)) * width * 6)
			for b.Loop() {
				Gather(dst, width, src, width, width, idx)
			}
		})
	}
}

// TestGuardPage: the bulk kernels and the gather read and write nothing
// past the ends of their slices, at every length up to 64.
func TestGuardPage(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		for n := 1; n <= 64; n++ {
			src := guardtest.Float32s(t, n)
			for i := range src {
				src[i] = float32(i) + 0.5
			}
			h := guardtest.Uint16s(t, n)
			Encode(h, src)
			back := guardtest.Float32s(t, n)
			Decode(back, h)
			for i, v := range back {
				if v != float32(i)+0.5 {
					t.Fatalf("%v n=%d: round trip [%d] = %v", l, n, i, v)
				}
			}
			g := guardtest.Float32s(t, n)
			Gather(g, n, h, n, n, []int32{0})
			if g[n-1] != back[n-1] {
				t.Fatalf("%v n=%d: gathered %v, want %v", l, n, g[n-1], back[n-1])
			}
			// Two rows of n-1 values, strides n: the last value read and
			// written is the slices' last.
			if n > 1 {
				h2 := guardtest.Uint16s(t, 2*n-1)
				for i := range h2 {
					h2[i] = FromFloat32(float32(i) + 0.5)
				}
				rows := guardtest.Float32s(t, 2*n-1)
				DecodeRows(rows, n, h2, n, 2, n-1)
				if got, want := rows[2*n-2], float32(2*n-2)+0.5; got != want {
					t.Fatalf("%v n=%d: DecodeRows' last value %v, want %v", l, n, got, want)
				}
			}
		}
	}
}

// FuzzEncode checks rounding against the float64 reference, and every
// level's Encode and Decode against the scalar conversions, on the
// float32s spelled by the input's bytes.
func FuzzEncode(f *testing.F) {
	f.Add([]byte{0, 0x80, 0x7f, 0x7f, 0xff, 0xff, 0x7f, 0x7f, 1, 0, 0x80, 0x3f})
	f.Fuzz(func(t *testing.T, data []byte) {
		src := make([]float32, len(data)/4)
		for i := range src {
			src[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
			if g := FromFloat32(src[i]); src[i] == src[i] && g != reference(src[i]) {
				t.Fatalf("FromFloat32(%#08x) = %#04x, want %#04x", math.Float32bits(src[i]), g, reference(src[i]))
			}
		}
		for _, l := range levels() {
			saved := impl
			impl = kernelsFor(l)
			h := make([]uint16, len(src))
			Encode(h, src)
			back := make([]float32, len(src))
			Decode(back, h)
			impl = saved
			for i, f := range src {
				if h[i] != FromFloat32(f) || math.Float32bits(back[i]) != uint32(h[i])<<16 {
					t.Fatalf("%v: [%d] %#08x encodes to %#04x, decodes to %#08x", l, i, math.Float32bits(f), h[i], math.Float32bits(back[i]))
				}
			}
		}
	})
}
