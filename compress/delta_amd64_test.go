//go:build !noasm && !amd64.v3

package compress

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The AVX-512 kernels are twins of deltarow.go's Go loops: the same
// messages, reconstructions and decoded rows, bit for bit, at every width
// (whole blocks and tails) and bit width, for ordinary rows and rows with
// NaNs, infinities, ±0, huge ranges and constant differences.
func TestDeltaKernelsMatchGo(t *testing.T) {
	if !deltaAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	defer func(v bool) { deltaAsm = v }(deltaAsm)
	r := rand.New(rand.NewPCG(21, 2))
	special := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-38, 3e38, -3e38, 1e-45}
	for _, bits := range []int{1, 2, 4, 8} {
		for width := 0; width <= 67; width++ {
			for trial := range 6 {
				const rows = 6
				spec := fmt.Sprintf("delta:%d:0:0", bits)
				asm, plain := newDelta(t, spec), newDelta(t, spec)
				asmRecv, plainRecv := newDelta(t, spec), newDelta(t, spec)
				src := newDeltaSource(r, rows, width)
				out, pout := make([]float32, rows*width), make([]float32, rows*width)
				for step := range 4 {
					x := slices.Clone(src.next(width))
					switch trial {
					case 1: // scattered specials
						for i := range x {
							if r.IntN(5) == 0 {
								x[i] = special[r.IntN(len(special))]
							}
						}
					case 2: // a wide range
						for i := range x {
							x[i] *= float32(math.Pow(10, float64(r.IntN(70)-35)))
						}
					case 3: // rows of one value a bfloat16 holds exactly: differences of one value, steps of 0
						for i := range rows {
							v := float32(r.IntN(9)-4) / 2
							for j := range width {
								x[i*width+j] = v
							}
						}
					case 4: // subnormal differences: steps whose reciprocal overflows
						for i := range x {
							x[i] = float32(r.NormFloat64() * 1e-40)
						}
					case 5: // rows of one special value
						for i := range rows {
							v := special[r.IntN(len(special))]
							for j := range width {
								x[i*width+j] = v
							}
						}
					}
					key := Key{Step: step}
					deltaAsm = true
					got := asm.Encode(nil, x, rows, width, 1, key)
					deltaAsm = false
					want := plain.Encode(nil, x, rows, width, 1, key)
					if !bytes.Equal(got, want) {
						t.Fatalf("%s width %d trial %d step %d: kernel encodes\n%x\nGo encodes\n%x", spec, width, trial, step, got, want)
					}
					if !slices.Equal(float32Bits(asm.streams[streamEnd{}].recon), float32Bits(plain.streams[streamEnd{}].recon)) {
						t.Fatalf("%s width %d trial %d step %d: the senders' reconstructions differ", spec, width, trial, step)
					}
					deltaAsm = true
					if err := asmRecv.Decode(out, rows, width, 1, key, want); err != nil {
						t.Fatal(err)
					}
					deltaAsm = false
					if err := plainRecv.Decode(pout, rows, width, 1, key, want); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(float32Bits(out), float32Bits(pout)) {
						t.Fatalf("%s width %d trial %d step %d: the kernel decodes other rows", spec, width, trial, step)
					}
				}
			}
		}
	}
}

// Random messages (as a fuzzer would send) decode to the same bits,
// whatever stands in a row's unused last bits.
func TestDeltaDecodeKernelMatchesGoOnRandomBytes(t *testing.T) {
	if !deltaAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	defer func(v bool) { deltaAsm = v }(deltaAsm)
	r := rand.New(rand.NewPCG(21, 3))
	for _, bits := range []int{1, 2, 4, 8} {
		for width := 1; width <= 67; width++ {
			b := make([]byte, rowBytes(bits, width))
			for range 8 {
				for i := range b {
					b[i] = byte(r.Uint32())
				}
				b[1] = byte(r.IntN(3)) << 6 // a moderate exponent now and then
				rec := randRows(r, 1, width)
				want := slices.Clone(rec)
				deltaAsm = true
				applyDeltaRow(rec, b, bits)
				deltaAsm = false
				applyDeltaRow(want, b, bits)
				if !slices.Equal(float32Bits(rec), float32Bits(want)) {
					t.Fatalf("bits %d width %d: kernel %v, Go %v", bits, width, rec, want)
				}
			}
		}
	}
}
