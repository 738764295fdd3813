package dropmask

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/internal/cpuid"
	"github.com/graft-gnn/graft/internal/guardtest"
	"unsafe"
)

// levels lists every kernel level this CPU and build can run, widest
// first, the twin (Generic) last.
func levels() []cpuid.Level {
	var ls []cpuid.Level
	for _, l := range []cpuid.Level{cpuid.AVX512, cpuid.AVX2} {
		if l <= cpuid.Detected && kernelLevel(l) == l {
			ls = append(ls, l)
		}
	}
	return append(ls, cpuid.Generic)
}

// useLevel switches Apply's kernel for the rest of the test.
func useLevel(t testing.TB, l cpuid.Level) {
	saved := level
	level = kernelLevel(l)
	t.Cleanup(func() { level = saved })
}

// TestApplyMatchesTwin checks every level's kernel against the pure-Go twin
// bit for bit: lengths around the 16- and 32-column steps, thresholds at
// their ends, NaN and negative zero, in place and out of place, and a
// guard element past the end that must stay untouched.
func TestApplyMatchesTwin(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		rng := rand.New(rand.NewPCG(3, 4))
		for _, thr := range []int32{0, 1, 6554, 32768, 65535, Drop} {
			for n := 0; n <= 200; n++ {
				key, row := rng.Uint64(), rng.Uint64()>>rng.IntN(64)
				x := make([]float32, n)
				for i := range x {
					x[i] = rng.Float32()*4 - 2
				}
				if n > 5 {
					x[3], x[5] = float32(math.NaN()), float32(math.Copysign(0, -1))
				}
				want := make([]float32, n)
				applyFrom(want, x, 0, key, row, thr, 1.25)
				got := append(make([]float32, n), 7) // guard
				Apply(got, x, key, row, thr, 1.25)
				in := append(append([]float32(nil), x...), 7)
				Apply(in[:n], in[:n], key, row, thr, 1.25)
				for i := range n {
					w := math.Float32bits(want[i])
					if math.Float32bits(got[i]) != w || math.Float32bits(in[i]) != w {
						t.Fatalf("%v thr %d n %d col %d: got %v (in place %v), want %v", l, thr, n, i, got[i], in[i], want[i])
					}
				}
				if got[n] != 7 || in[n] != 7 {
					t.Fatalf("%v thr %d n %d: guard overwritten", l, thr, n)
				}
			}
		}
	}
}

// TestApplyStaysInsideTheRow runs every level's Apply on rows that end
// where a page no one may touch begins: the last columns, short of a
// vector, must be read and written under their length alone.
func TestApplyStaysInsideTheRow(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		for n := 1; n <= 100; n++ {
			x, y := guardtest.Float32s(t, n), guardtest.Float32s(t, n)
			for i := range x {
				x[i] = float32(i + 1)
			}
			want := make([]float32, n)
			applyFrom(want, x, 0, 9, 11, 30000, 2)
			Apply(y, x, 9, 11, 30000, 2)
			Apply(x, x, 9, 11, 30000, 2)
			for i := range n {
				if y[i] != want[i] || x[i] != want[i] {
					t.Fatalf("%v n %d col %d: %v (in place %v), want %v", l, n, i, y[i], x[i], want[i])
				}
			}
		}
	}
}

// TestApplyAllocatesNothing checks that Apply leaves its rows where they
// are: rows on the caller's stack must not escape to the heap.
func TestApplyAllocatesNothing(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		if a := testing.AllocsPerRun(100, func() {
			var x, y [40]float32
			Apply(y[:], x[:], 1, 2, 30000, 2)
		}); a != 0 {
			t.Errorf("%v: %v allocations per Apply", l, a)
		}
	}
}

// TestApplyAgreesWithKeep checks that Apply drops exactly the elements Keep
// reports dropped, and that kept elements are scaled.
func TestApplyAgreesWithKeep(t *testing.T) {
	const n, key, row, thr = 100, 0x1234, 987654321, 20000
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i + 1)
	}
	y := make([]float32, n)
	Apply(y, x, key, row, thr, 2)
	for j := range n {
		kept := Keep(key, row, uint64(j), thr)
		if kept != (y[j] != 0) || (kept && y[j] != 2*x[j]) || (!kept && math.Signbit(float64(y[j]))) {
			t.Fatalf("col %d: Keep %v, Apply gave %v for %v", j, kept, y[j], x[j])
		}
	}
}

// TestDropRate checks that the fraction dropped is p, within four standard
// deviations, and that rows and keys give different masks.
func TestDropRate(t *testing.T) {
	for _, p := range []float64{0.1, 0.5, 0.9} {
		thr := Threshold(p)
		const rows, cols = 200, 256
		dropped := 0
		for r := range uint64(rows) {
			for c := range uint64(cols) {
				if !Keep(42, r, c, thr) {
					dropped++
				}
			}
		}
		total := float64(rows * cols)
		if sd := math.Sqrt(total * p * (1 - p)); math.Abs(float64(dropped)-p*total) > 4*sd {
			t.Errorf("p %.1f: dropped %d of %.0f", p, dropped, total)
		}
	}
	same := 0
	for c := range uint64(256) {
		if Keep(1, 5, c, Threshold(0.5)) == Keep(1, 6, c, Threshold(0.5)) {
			same++
		}
		if Keep(1, 5, c, Threshold(0.5)) == Keep(2, 5, c, Threshold(0.5)) {
			same++
		}
	}
	if same < 200 || same > 312 {
		t.Errorf("masks of different rows or keys agree on %d of 512 columns; want about half", same)
	}
}

func TestThreshold(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want int32
	}{{-1, 0}, {0, 0}, {0.5, 32768}, {1, Drop}, {2, Drop}} {
		if got := Threshold(c.p); got != c.want {
			t.Errorf("Threshold(%v) = %d, want %d", c.p, got, c.want)
		}
	}
}

// BenchmarkApply times every level's Apply (generic: the twin) on rows of
// 100 (ogbn-products' features) and 256 (a hidden layer) columns.
func BenchmarkApply(b *testing.B) {
	for _, cols := range []int{100, 256} {
		x := make([]float32, cols)
		y := make([]float32, cols)
		for i := range x {
			x[i] = float32(i)
		}
		for _, l := range levels() {
			b.Run(fmt.Sprintf("%d/%v", cols, l), func(b *testing.B) {
				useLevel(b, l)
				b.SetBytes(int64(8 * cols))
				for i := 0; b.Loop(); i++ {
					Apply(y, x, 7, uint64(i), 32768, 2)
				}
			})
		}
	}
}

// TestKeepBitsMatchesTwin checks every level's KeepBits against the twin
// and against Keep: lengths around the 16-, 32- and 64-column steps,
// thresholds at their ends, stale bits in dst and a guard word past it.
func TestKeepBitsMatchesTwin(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		rng := rand.New(rand.NewPCG(5, 6))
		for _, thr := range []int32{0, 1, 6554, 32768, 65535, Drop} {
			for n := 0; n <= 300; n++ {
				key, row := rng.Uint64(), rng.Uint64()>>rng.IntN(64)
				w := Words(n)
				got := make([]uint64, w+1)
				for i := range got {
					got[i] = rng.Uint64() // stale bits must go
				}
				guard := got[w]
				KeepBits(got[:w], n, key, row, thr)
				want := make([]uint64, w)
				keepBitsFrom(want, n, key, row, thr)
				for i := range w {
					if got[i] != want[i] {
						t.Fatalf("%v thr %d n %d word %d: %#x, want %#x", l, thr, n, i, got[i], want[i])
					}
				}
				if got[w] != guard {
					t.Fatalf("%v thr %d n %d: guard word overwritten", l, thr, n)
				}
				for j := range n {
					if bit := want[j/64]>>(j%64)&1 == 1; bit != Keep(key, row, uint64(j), thr) {
						t.Fatalf("thr %d n %d col %d: twin's bit %v disagrees with Keep", thr, n, j, bit)
					}
				}
				if n%64 != 0 && want[w-1]>>(n%64) != 0 {
					t.Fatalf("thr %d n %d: bits past n set", thr, n)
				}
			}
		}
	}
}

// TestKeepBitsStaysInsideTheRow runs every level's KeepBits on words that
// end where a page no one may touch begins.
func TestKeepBitsStaysInsideTheRow(t *testing.T) {
	for _, l := range levels() {
		useLevel(t, l)
		for n := 1; n <= 200; n++ {
			w := Words(n)
			f := guardtest.Float32s(t, 2*w) // 8-byte aligned words at the page's end
			dst := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(f))), w)
			KeepBits(dst, n, 9, 11, 30000)
			want := make([]uint64, w)
			keepBitsFrom(want, n, 9, 11, 30000)
			for i := range w {
				if dst[i] != want[i] {
					t.Fatalf("%v n %d word %d: %#x, want %#x", l, n, i, dst[i], want[i])
				}
			}
		}
	}
}

// BenchmarkKeepBits times every level's KeepBits (generic: the twin) on
// rows of 100 (ogbn-products' features) and 256 columns, against Apply
// on the same rows (BenchmarkApply).
func BenchmarkKeepBits(b *testing.B) {
	for _, cols := range []int{100, 256} {
		dst := make([]uint64, Words(cols))
		for _, l := range levels() {
			b.Run(fmt.Sprintf("%d/%v", cols, l), func(b *testing.B) {
				useLevel(b, l)
				for i := 0; b.Loop(); i++ {
					KeepBits(dst, cols, 7, uint64(i), 32768)
				}
			})
		}
	}
}
