//go:build !noasm

package compress

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// The AVX-512 kernels are twins of the pure-Go loops: the same message
// bytes and the same decoded bits, at every width (whole blocks and
// tails), for ordinary rows, rows with NaNs, ±0, infinities and constant
// rows.
func TestQuantKernelsMatchGo(t *testing.T) {
	if !quantAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	r := rand.New(rand.NewPCG(3, 4))
	special := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), 1e-38, 3e38, -3e38}
	for _, bits := range []int{8, 4, 2, 1} {
		q := &quantizer{bits}
		for width := 0; width <= 131; width++ {
			for trial := range 4 {
				const rows = 5
				x := randRows(r, rows, width)
				switch trial {
				case 1: // scattered specials
					for i := range x {
						if r.IntN(7) == 0 {
							x[i] = special[r.IntN(len(special))]
						}
					}
				case 2: // constant rows, and ±0 rows
					for i := range x {
						x[i] = 0.5
						if i/max(width, 1) == 1 {
							x[i] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
						}
					}
				case 3: // a wide range
					for i := range x {
						x[i] *= float32(math.Pow(10, float64(r.IntN(60)-30)))
					}
				}
				key := Key{Seed: 9, Step: trial, Layer: width, From: bits}
				quantAsm = false
				want := q.Encode(nil, x, rows, width, 1, key)
				wantOut := make([]float32, rows*width)
				if err := q.Decode(wantOut, rows, width, 1, key, want); err != nil {
					t.Fatal(err)
				}
				quantAsm = true
				got := q.Encode(nil, x, rows, width, 1, key)
				if !bytes.Equal(got, want) {
					t.Fatalf("quant%d width %d trial %d: kernel encodes\n%x\nGo encodes\n%x", bits, width, trial, got, want)
				}
				out := make([]float32, rows*width)
				if err := q.Decode(out, rows, width, 1, key, want); err != nil {
					t.Fatal(err)
				}
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(wantOut[i]) {
						t.Fatalf("quant%d width %d trial %d: kernel decodes [%d] = %v, Go %v", bits, width, trial, i, out[i], wantOut[i])
					}
				}
			}
		}
	}
}

// Random messages (as a fuzzer would send) decode to the same bits.
func TestQuantDecodeKernelMatchesGoOnRandomBytes(t *testing.T) {
	if !quantAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, bits := range []int{8, 4, 2, 1} {
		q := &quantizer{bits}
		for _, width := range []int{16, 33, 64, 100} {
			src := make([]byte, 3*q.rowBytes(width))
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			quantAsm = false
			want := make([]float32, 3*width)
			q.Decode(want, 3, width, 1, Key{}, src)
			quantAsm = true
			got := make([]float32, 3*width)
			q.Decode(got, 3, width, 1, Key{}, src)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("quant%d width %d: [%d] = %v, Go %v", bits, width, i, got[i], want[i])
				}
			}
		}
	}
}

// The per-message hash prefix gives every row the base key.hash(true, row).
func TestRowBaseIsKeyHash(t *testing.T) {
	k := Key{Seed: 1, Step: 2, Layer: 3, From: 4, To: 5, Backward: true}
	for i := range uint64(10) {
		if mix(k.hash(true)^i) != k.hash(true, i) {
			t.Fatal("row base differs from key.hash(true, row)")
		}
	}
}

// bf16's kernels give the pure-Go loop's bytes and values, NaNs, infinities,
// subnormals and rounding ties included.
func TestBF16KernelsMatchGo(t *testing.T) {
	if !quantAsm {
		t.Skip("no AVX-512 + BMI2 on this CPU")
	}
	r := rand.New(rand.NewPCG(7, 8))
	var c bf16
	for n := 0; n <= 70; n++ {
		x := make([]float32, n)
		for i := range x {
			switch r.IntN(6) {
			case 0:
				x[i] = math.Float32frombits(r.Uint32()) // any bits: NaNs, subnormals
			case 1:
				x[i] = math.Float32frombits(r.Uint32()&^0xffff | 0x8000) // ties
			default:
				x[i] = float32(r.NormFloat64())
			}
		}
		quantAsm = false
		want := c.Encode([]byte{7}, x, 1, n, 1, Key{})
		wantOut := make([]float32, n)
		c.Decode(wantOut, 1, n, 1, Key{}, want[1:])
		quantAsm = true
		got := c.Encode([]byte{7}, x, 1, n, 1, Key{})
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d: kernel encodes %x, Go %x", n, got, want)
		}
		out := make([]float32, n)
		c.Decode(out, 1, n, 1, Key{}, want[1:])
		for i := range out {
			if math.Float32bits(out[i]) != math.Float32bits(wantOut[i]) {
				t.Fatalf("n=%d: kernel decodes [%d] = %x, Go %x", n, i, math.Float32bits(out[i]), math.Float32bits(wantOut[i]))
			}
		}
		h := make([]uint16, n) // and both are tensor.ToBF16's
		tensor.ToBF16(h, x)
		for i := range h {
			if math.Float32bits(out[i]) != uint32(h[i])<<16 {
				t.Fatalf("n=%d: [%d] = %x, tensor.ToBF16 %x", n, i, math.Float32bits(out[i]), h[i])
			}
		}
	}
}
