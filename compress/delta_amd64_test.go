//go:build !noasm && !amd64.v3

package compress

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/graft-gnn/graft/internal/cpuid"
	"github.com/graft-gnn/graft/internal/guardtest"
)

// deltaKernelsHere is the kernels this CPU runs, by name: on a CPU with
// AVX-512 both the AVX-512 and the AVX2 ones.
func deltaKernelsHere(t *testing.T) map[string]int {
	ks := map[string]int{}
	if quantAsm {
		ks["avx512"] = deltaAVX512
	}
	if cpuid.Detected >= cpuid.AVX2 {
		ks["avx2"] = deltaAVX2
	}
	if len(ks) == 0 {
		t.Skip("no AVX2 on this CPU")
	}
	return ks
}

// The selection: AVX-512 where the quantiser's kernels run, else AVX2.
func TestDeltaKernelSelection(t *testing.T) {
	for _, c := range []struct {
		avx512, avx2 bool
		want         int
	}{{true, true, deltaAVX512}, {false, true, deltaAVX2}, {false, false, deltaGo}} {
		if got := deltaKernelFor(c.avx512, c.avx2); got != c.want {
			t.Errorf("deltaKernelFor(%v, %v) = %d, want %d", c.avx512, c.avx2, got, c.want)
		}
	}
	if want := deltaKernelFor(quantAsm, cpuid.Detected >= cpuid.AVX2); deltaKernel != want {
		t.Errorf("deltaKernel %d on this CPU, want %d", deltaKernel, want)
	}
}

// The AVX-512 and AVX2 kernels are twins of deltarow.go's Go loops: the
// same messages, reconstructions and decoded rows, bit for bit, at every
// width (whole blocks and tails) and bit width, for ordinary rows and rows
// with NaNs, infinities, ±0, huge ranges and constant differences, in
// messages of 1 to 19 rows (whole groups of rows and partial ones), every
// row sent or, under a threshold, some.
func TestDeltaKernelsMatchGo(t *testing.T) {
	for name, k := range deltaKernelsHere(t) {
		t.Run(name, func(t *testing.T) { testDeltaKernelMatchesGo(t, k) })
	}
}

func testDeltaKernelMatchesGo(t *testing.T, kernel int) {
	defer func(v int) { deltaKernel = v }(deltaKernel)
	r := rand.New(rand.NewPCG(21, 2))
	special := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-38, 3e38, -3e38, 1e-45}
	for _, bits := range []int{1, 2, 4, 8} {
		for width := 0; width <= 67; width++ {
			for trial := range 6 {
				rows := []int{6, 1, 8, 9, 16, 19}[(width+trial)%6]
				// A threshold sends some rows and not others, one row at a
				// time (encodeDeltaRow, applyDeltaRow).
				threshold := []float64{0, 0, 0.3}[(width+trial)%3]
				spec := fmt.Sprintf("delta:%d:%g:0", bits, threshold)
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
					deltaKernel = kernel
					got := asm.Encode(nil, x, rows, width, 1, key)
					deltaKernel = deltaGo
					want := plain.Encode(nil, x, rows, width, 1, key)
					if !bytes.Equal(got, want) {
						t.Fatalf("%s width %d trial %d step %d: kernel encodes\n%x\nGo encodes\n%x", spec, width, trial, step, got, want)
					}
					if got, want := asm.streams[streamEnd{}].recon, plain.streams[streamEnd{}].recon; len(want) != rows*width || !slices.Equal(float32Bits(got), float32Bits(want)) {
						t.Fatalf("%s width %d trial %d step %d: the senders' reconstructions differ", spec, width, trial, step)
					}
					deltaKernel = kernel
					if err := asmRecv.Decode(out, rows, width, 1, key, want); err != nil {
						t.Fatal(err)
					}
					deltaKernel = deltaGo
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
	for name, k := range deltaKernelsHere(t) {
		t.Run(name, func(t *testing.T) { testDeltaDecodeKernelOnRandomBytes(t, k) })
	}
}

func testDeltaDecodeKernelOnRandomBytes(t *testing.T, kernel int) {
	defer func(v int) { deltaKernel = v }(deltaKernel)
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
				deltaKernel = kernel
				applyDeltaRow(rec, b, bits)
				deltaKernel = deltaGo
				applyDeltaRow(want, b, bits)
				if !slices.Equal(float32Bits(rec), float32Bits(want)) {
					t.Fatalf("bits %d width %d: kernel %v, Go %v", bits, width, rec, want)
				}
			}
		}
	}
}

// The kernels write a message's bytes and the rows' values and nothing
// past them: guards after the message, the reconstruction and the
// decoded rows keep their values.
func TestDeltaKernelsStayInBounds(t *testing.T) {
	for name, k := range deltaKernelsHere(t) {
		t.Run(name, func(t *testing.T) {
			defer func(v int) { deltaKernel = v }(deltaKernel)
			deltaKernel = k
			r := rand.New(rand.NewPCG(21, 4))
			const guard = 16
			for _, bits := range []int{1, 2, 4, 8} {
				for width := 1; width <= 35; width++ {
					for _, rows := range []int{1, 3, 8, 11} {
						rb := rowBytes(bits, width)
						msg := make([]byte, rows*rb+guard)
						x := randRows(r, rows, width)
						rec := make([]float32, rows*width+guard)
						out := make([]float32, rows*width+guard)
						for i := range guard {
							msg[rows*rb+i] = 0xa5
							rec[rows*width+i] = 7
							out[rows*width+i] = 9
						}
						deltaEncodeRows(&msg[0], &x[0], &rec[0], rows, width, bits)
						deltaApplyRows(&rec[0], &out[0], &msg[0], rows, width, bits, true)
						for i := range guard {
							if msg[rows*rb+i] != 0xa5 || rec[rows*width+i] != 7 || out[rows*width+i] != 9 {
								t.Fatalf("bits %d width %d rows %d: a guard changed", bits, width, rows)
							}
						}
					}
				}
			}
		})
	}
}

// The kernels read nothing past their operands either: each one ends at a
// page that faults when touched (internal/guardtest), the message, x, the
// reconstruction and the decoded rows alike.
func TestDeltaKernelsReadNothingPastTheEnd(t *testing.T) {
	for name, k := range deltaKernelsHere(t) {
		t.Run(name, func(t *testing.T) {
			defer func(v int) { deltaKernel = v }(deltaKernel)
			deltaKernel = k
			r := rand.New(rand.NewPCG(22, 5))
			for _, bits := range []int{1, 2, 4, 8} {
				for width := 1; width <= 41; width++ {
					for _, rows := range []int{1, 2, 5, 17} {
						n := rows * width
						msg := guardtest.Bytes(t, rows*rowBytes(bits, width))
						x := guardtest.Float32s(t, n)
						copy(x, randRows(r, rows, width))
						rec := guardtest.Float32s(t, n)
						out := guardtest.Float32s(t, n)
						deltaEncodeRows(&msg[0], &x[0], &rec[0], rows, width, bits)
						rec2 := guardtest.Float32s(t, n)
						deltaApplyRows(&rec2[0], &out[0], &msg[0], rows, width, bits, true)
						for i := range rec {
							if rec2[i] != rec[i] {
								t.Fatalf("bits %d width %d rows %d: decoded reconstruction [%d] = %v, sender's %v", bits, width, rows, i, rec2[i], rec[i])
							}
						}
					}
				}
			}
		})
	}
}

// Decoding into out around the cache (deltaStreamOut) writes the same
// rows and reconstruction as through it, whether out's rows start on a
// 64-byte line or not, at widths of whole blocks and with tails.
func TestDeltaApplyStreamedMatchesCached(t *testing.T) {
	for name, k := range deltaKernelsHere(t) {
		t.Run(name, func(t *testing.T) {
			defer func(v int) { deltaKernel = v }(deltaKernel)
			deltaKernel = k
			r := rand.New(rand.NewPCG(21, 6))
			for _, bits := range []int{1, 2, 4, 8} {
				for _, width := range []int{1, 15, 16, 17, 32, 40, 64, 67} {
					for _, skew := range []int{0, 1, 8} { // out's first value, in float32s past a 64-byte line
						const rows = 37
						n := rows * width
						msg := make([]byte, rows*rowBytes(bits, width))
						rec := make([]float32, n)
						deltaEncodeRows(&msg[0], &randValues(r, n)[0], &rec[0], rows, width, bits)
						// A second message, against the first's reconstruction.
						deltaEncodeRows(&msg[0], &randValues(r, n)[0], &rec[0], rows, width, bits)
						base := randRows(r, rows, width)
						cached, streamed := slices.Clone(base), slices.Clone(base)
						want, got := aligned(n, skew), aligned(n, skew)
						deltaApplyRows(&cached[0], &want[0], &msg[0], rows, width, bits, false)
						deltaApplyRows(&streamed[0], &got[0], &msg[0], rows, width, bits, true)
						if !slices.Equal(float32Bits(got), float32Bits(want)) || !slices.Equal(float32Bits(streamed), float32Bits(cached)) {
							t.Fatalf("bits %d width %d skew %d: streamed decoding differs", bits, width, skew)
						}
						if !slices.Equal(float32Bits(got), float32Bits(streamed)) {
							t.Fatalf("bits %d width %d skew %d: out is not the reconstruction", bits, width, skew)
						}
					}
				}
			}
		})
	}
}

// randValues is n random values.
func randValues(r *rand.Rand, n int) []float32 { return randRows(r, 1, n) }

// aligned is n float32s starting skew float32s past a 64-byte line.
func aligned(n, skew int) []float32 {
	b := make([]float32, n+32)
	off := int(uintptr(unsafe.Pointer(&b[0]))%64) / 4
	start := (16-off)%16 + skew
	return b[start : start+n]
}

// Decode picks writing around the cache from the message's size alone:
// messages just below and at or just above deltaStreamOut (widths of
// whole blocks and with a tail, out on a 64-byte line or off it) decode to
// the Go twin's rows and reconstruction, bit for bit, and the rows the two
// sizes share decode alike.
func TestDeltaDecodeAtTheStreamingThreshold(t *testing.T) {
	for name, k := range deltaKernelsHere(t) {
		t.Run(name, func(t *testing.T) {
			defer func(v int) { deltaKernel = v }(deltaKernel)
			for _, width := range []int{64, 67} {
				below := (deltaStreamOut - 1) / (4 * width) // the most rows under the threshold
				if streamsOut(below, width) || !streamsOut(below+1, width) {
					t.Fatalf("width %d: %d rows stream %v, %d rows %v; want the threshold between them", width, below, streamsOut(below, width), below+1, streamsOut(below+1, width))
				}
				for _, skew := range []int{0, 1} {
					var first []float32 // the smaller message's rows
					for _, rows := range []int{below, below + 1, below + 2} {
						n := rows * width
						spec := "delta:4:0:0"
						send, recv, twin := newDelta(t, spec), newDelta(t, spec), newDelta(t, spec)
						got, want := aligned(n, skew), aligned(n, skew)
						for step := range 2 {
							src := rand.New(rand.NewPCG(uint64(width), uint64(step))) // the same values for the rows both sizes share
							x := make([]float32, n)
							for i := range x {
								x[i] = float32(src.NormFloat64()) * float32(1+step)
							}
							deltaKernel = deltaGo
							msg := send.Encode(nil, x, rows, width, 1, Key{Step: step})
							deltaKernel = k
							if err := recv.Decode(got, rows, width, 1, Key{Step: step}, msg); err != nil {
								t.Fatal(err)
							}
							deltaKernel = deltaGo
							if err := twin.Decode(want, rows, width, 1, Key{Step: step}, msg); err != nil {
								t.Fatal(err)
							}
						}
						if !slices.Equal(float32Bits(got), float32Bits(want)) {
							t.Fatalf("width %d, %d rows (streamed %v), skew %d: the kernel decodes other rows than Go", width, rows, streamsOut(rows, width), skew)
						}
						if gr, wr := recv.streams[streamEnd{Recv: true}].recon, twin.streams[streamEnd{Recv: true}].recon; len(wr) != n || !slices.Equal(float32Bits(gr), float32Bits(wr)) {
							t.Fatalf("width %d, %d rows, skew %d: the reconstructions differ", width, rows, skew)
						}
						if first == nil {
							first = slices.Clone(got)
						} else if !slices.Equal(float32Bits(got[:len(first)]), float32Bits(first)) {
							t.Fatalf("width %d, %d rows, skew %d: the rows below the threshold decode otherwise above it", width, rows, skew)
						}
					}
				}
			}
		})
	}
}
