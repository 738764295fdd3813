//go:build !noasm

package compress

import (
	"math"
	bits64 "math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// topkSelectGo finds a threshold for a row's k largest magnitudes (0 < k < n)
// by settling its bits from the top, two a step, counting the magnitudes
// (as bit patterns, in keys) at or above three candidates per step: thr is
// the k-th largest, or the first value the search meets with exactly k at
// or above it. It returns atLeast, that count, or −1 for a row with a NaN.
// It is the pure-Go twin of topkSelectAVX512, where a step is a few
// vector compares per 16 values with no branch on the data; about six
// steps settle a row of 64.
func topkSelectGo(keys, bits []uint32, k int) (thr uint32, atLeast int) {
	var largest uint32
	nonzero := 0
	for j, b := range bits {
		keys[j] = b &^ (1 << 31)
		largest = max(largest, keys[j])
		nonzero += b2i(keys[j] != 0)
	}
	switch {
	case largest > 0x7f800000:
		return 0, -1
	case nonzero < k: // zeros fill the row: ties at 0
		return 0, len(bits)
	case nonzero == k:
		return 1, k
	}
	atLeast = len(bits)
	for step := uint32(1) << ((bits64.Len32(largest)+1)&^1 - 2); step != 0; step >>= 2 {
		base := thr
		for i := uint32(1); i <= 3; i++ {
			n := 0
			for _, key := range keys {
				n += b2i(key >= base+i*step)
			}
			if n >= k {
				thr, atLeast = base+i*step, n
			}
		}
		if atLeast == k {
			break
		}
	}
	return thr, atLeast
}

// The AVX-512 selection is its Go twin's: the same threshold, count and
// keys for widths 3 to 200 (whole blocks and tails) and k from 1 to width − 1, on the
// rows topKRow makes (ties, zeros, NaNs, infinities, subnormals) and on
// ReLU-like rows; and the twin's threshold is right: exactly atLeast
// magnitudes at or above it, and fewer than k above it unless atLeast = k.
func TestTopKSelectKernelMatchesGo(t *testing.T) {
	if !bitmapAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	r := rand.New(rand.NewPCG(8, 9))
	for width := 3; width <= 200; width++ {
		row := make([]float32, width)
		bits := float32Bits(row)
		keys := make([]uint32, (width+15)&^15)
		want := make([]uint32, width)
		for trial := range 6 {
			if trial%2 == 0 {
				topKRow(r, row)
			} else {
				for j := range row {
					row[j] = float32(max(0, r.NormFloat64()))
				}
			}
			for k := 1; k < width; k += 1 + width/40 {
				wthr, wn := topkSelectGo(want, bits, k)
				clear(keys)
				mask := make([]uint64, (width+63)/64)
				thr, n := topkSelectAVX512(&keys[0], &bits[0], &mask[0], width, k)
				if thr != wthr || n != wn {
					t.Fatalf("width %d k %d row %v: kernel (%#x, %d), Go (%#x, %d)", width, k, row, thr, n, wthr, wn)
				}
				if wn < 0 {
					continue
				}
				atLeast, above := 0, 0
				for j, key := range want {
					if keys[j] != key {
						t.Fatalf("width %d: key %d = %#x, want %#x", width, j, keys[j], key)
					}
					atLeast += b2i(key >= wthr)
					above += b2i(key > wthr)
				}
				if atLeast != wn || wn < k || (wn > k && above >= k) {
					t.Fatalf("width %d k %d: threshold %#x with %d at or above (said %d) and %d above", width, k, wthr, atLeast, wn, above)
				}
				want := make([]uint64, len(mask))
				keptMask(want, bits, k, thr, n)
				if !slices.Equal(mask, want) {
					t.Fatalf("width %d k %d: mask %x, want %x", width, k, mask, want)
				}
			}
		}
	}
}

// subspace's rows go through the same masked pack and unpack on AVX-512:
// the same message and the same decoded bits as its Go loops.
func TestSubspaceKernelsMatchGo(t *testing.T) {
	if !bitmapAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	defer func() { bitmapAsm = true }()
	r := rand.New(rand.NewPCG(10, 11))
	for width := 2; width <= 130; width++ {
		for _, ratio := range []float64{1.3, 2, 3.7, 9} {
			const rows = 3
			x := randRows(r, rows, width)
			x[width/3] = float32(math.Inf(-1))
			key := Key{Seed: 3, Step: width, Layer: 1, From: 0, To: 2}
			var msgs [2][]byte
			var outs [2][]float32
			for i, asm := range []bool{false, true} {
				bitmapAsm = asm
				c, _ := New("subspace")
				msgs[i] = c.Encode(nil, x, rows, width, ratio, key)
				outs[i] = make([]float32, rows*width)
				if err := c.Decode(outs[i], rows, width, ratio, key, msgs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(msgs[0], msgs[1]) {
				t.Fatalf("width %d ratio %v: the kernel's message differs", width, ratio)
			}
			for j := range outs[0] {
				if math.Float32bits(outs[0][j]) != math.Float32bits(outs[1][j]) {
					t.Fatalf("width %d ratio %v: value %d decodes to %v, Go %v", width, ratio, j, outs[1][j], outs[0][j])
				}
			}
		}
	}
}

// The pair kernel gives each row of a pair the mask the single-row kernel
// gives, or declines the pair; on rows of distinct normal values it must
// not decline.
func TestTopKSelectPairKernelMatchesSingle(t *testing.T) {
	if !bitmapAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	r := rand.New(rand.NewPCG(12, 13))
	for width := 2; width <= 64; width++ {
		keys := make([]uint32, (width+15)&^15)
		for trial := range 8 {
			a, b := make([]float32, width), make([]float32, width)
			for j := range a {
				a[j], b[j] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			plain := trial < 4
			if !plain {
				topKRow(r, a)
				if trial%2 == 0 {
					topKRow(r, b)
				}
			}
			for k := 1; k < width; k++ {
				var pa, pb, sa, sb [1]uint64
				ok := topkSelectPairAVX512(&float32Bits(a)[0], &float32Bits(b)[0], &pa[0], &pb[0], width, k)
				_, na := topkSelectAVX512(&keys[0], &float32Bits(a)[0], &sa[0], width, k)
				_, nb := topkSelectAVX512(&keys[0], &float32Bits(b)[0], &sb[0], width, k)
				if plain && !ok {
					t.Fatalf("width %d k %d: declined rows of distinct normal values", width, k)
				}
				if ok && (na != k || nb != k || pa != sa || pb != sb) {
					t.Fatalf("width %d k %d: pair masks %x %x, single %x %x (counts %d %d)", width, k, pa[0], pb[0], sa[0], sb[0], na, nb)
				}
			}
		}
	}
}
