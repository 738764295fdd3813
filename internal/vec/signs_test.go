package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/graft-gnn/graft/internal/guardtest"
)

// specialValues are the values whose sign bit a compare can get wrong.
var specialValues = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.Float32frombits(0xffc00001), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	math.MaxFloat32, -math.MaxFloat32, 1, -1}

func signTestValues(rng *rand.Rand, n int) []float32 {
	x := randomSlice(rng, n)
	for i := range x {
		if rng.IntN(4) == 0 {
			x[i] = specialValues[rng.IntN(len(specialValues))]
		}
	}
	return x
}

// TestSignBits checks every level's SignBits against v > 0 value by value,
// the bits past the end clear, at every length up to 300 and beyond.
func TestSignBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, l := range levels() {
		useLevel(t, l)
		for _, n := range lengths {
			x := signTestValues(rng, n)
			bits := make([]uint64, (n+63)/64+1)
			for i := range bits {
				bits[i] = rng.Uint64() // stale bits must be overwritten
			}
			guard := bits[len(bits)-1]
			SignBits(bits[:len(bits)-1], x)
			for j := range 64 * (len(bits) - 1) {
				got := bits[j/64]>>(j%64)&1 == 1
				if want := j < n && x[j] > 0; got != want {
					t.Fatalf("%v n=%d: bit %d (value %v) = %v, want %v", l, n, j, x[min(j, n-1)], got, want)
				}
			}
			if bits[len(bits)-1] != guard {
				t.Fatalf("%v n=%d: wrote past the bits", l, n)
			}
		}
	}
}

// TestKeepByBits checks every level's KeepByBits against its definition,
// bit for bit: x·scale where the bit is set, +0 where clear, nothing past
// the end written.
func TestKeepByBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, l := range levels() {
		useLevel(t, l)
		for _, n := range lengths {
			for _, scale := range []float32{1, 2, 0.8} {
				x := signTestValues(rng, n)
				bits := make([]uint64, (n+63)/64)
				for i := range bits {
					bits[i] = rng.Uint64()
				}
				got := append(append([]float32(nil), x...), 99)
				KeepByBits(got[:n], bits, scale)
				for j, v := range x {
					want := float32(0)
					if bits[j/64]>>(j%64)&1 == 1 {
						want = v * scale
					}
					if g := got[j]; math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
						t.Fatalf("%v n=%d scale %v: [%d] = %v (%#x), want %v (%#x)", l, n, scale, j, g, math.Float32bits(g), want, math.Float32bits(want))
					}
				}
				if got[n] != 99 {
					t.Fatalf("%v n=%d: wrote past the end", l, n)
				}
			}
		}
	}
}

// TestSignsMatchTwins checks every level's SignBits and KeepByBits against
// the pure-Go twins word for word and bit for bit, NaN payloads included,
// over the special values at every length up to 300 and beyond and over
// scales that are special themselves (zeros, infinity, a denormal).
func TestSignsMatchTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	scales := []float32{1, 1.25, -2, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), math.SmallestNonzeroFloat32}
	for _, l := range levels() {
		useLevel(t, l)
		for _, n := range lengths {
			x := signTestValues(rng, n)
			want := make([]uint64, (n+63)/64)
			signBitsGeneric(want, x)
			got := make([]uint64, len(want))
			SignBits(got, x)
			for w := range want {
				if got[w] != want[w] {
					t.Fatalf("%v n=%d: SignBits word %d = %#x, want %#x", l, n, w, got[w], want[w])
				}
			}
			for _, scale := range scales {
				bits := make([]uint64, len(want))
				for i := range bits {
					bits[i] = rng.Uint64() >> rng.IntN(64) // runs of clear bits too
				}
				wantX := append([]float32(nil), x...)
				keepByBitsGeneric(wantX, bits, scale)
				gotX := append([]float32(nil), x...)
				KeepByBits(gotX, bits, scale)
				for j := range gotX {
					if g, w := math.Float32bits(gotX[j]), math.Float32bits(wantX[j]); g != w {
						t.Fatalf("%v n=%d scale %v: [%d] (value %v) = %#x, want %#x", l, n, scale, j, x[j], g, w)
					}
				}
			}
		}
	}
}

// TestSignsStayInBounds runs every level's SignBits and KeepByBits on
// values and bits that end where an inaccessible page begins, every bit
// set (past the end too), so that a kernel reading or writing a lane past
// either slice's end faults instead of passing by luck.
func TestSignsStayInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, l := range levels() {
		useLevel(t, l)
		for n := 1; n <= 200; n++ {
			words := (n + 63) / 64
			b := guardtest.Bytes(t, 8*words)
			bits := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), words)
			x := guardtest.Float32s(t, n)
			copy(x, signTestValues(rng, n))
			SignBits(bits, x)
			for j := range bits {
				bits[j] = ^uint64(0)
			}
			KeepByBits(x, bits, 1)
		}
	}
}

func TestSignBitsLengthPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"SignBits":   func() { SignBits(make([]uint64, 1), make([]float32, 65)) },
		"KeepByBits": func() { KeepByBits(make([]float32, 64), make([]uint64, 2), 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on a wrong number of words", name)
				}
			}()
			f()
		}()
	}
}

// BenchmarkSigns times a ReLU's sign bits forward and backward over a
// hidden layer's output that does not fit in cache (8 MB: 32,768 rows of
// 64 values), each level against the branching loop it replaces.
func BenchmarkSigns(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	x := signTestValues(rng, 1<<21)
	bits := make([]uint64, len(x)/64)
	for _, l := range levels() {
		b.Run(fmt.Sprintf("SignBits/%v", l), func(b *testing.B) {
			useLevel(b, l)
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				SignBits(bits, x)
			}
		})
		b.Run(fmt.Sprintf("KeepByBits/%v", l), func(b *testing.B) {
			useLevel(b, l)
			b.SetBytes(int64(8 * len(x)))
			for b.Loop() {
				KeepByBits(x, bits, 1)
			}
		})
	}
	b.Run("SignBits/branching", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			for w := range bits {
				bits[w] = 0
				for j, v := range x[64*w : 64*w+64] {
					if v > 0 {
						bits[w] |= 1 << j
					}
				}
			}
		}
	})
	b.Run("KeepByBits/branching", func(b *testing.B) {
		b.SetBytes(int64(8 * len(x)))
		for b.Loop() {
			for j := range x {
				if bits[j>>6]&(1<<(j&63)) == 0 {
					x[j] = 0
				}
			}
		}
	})
}
