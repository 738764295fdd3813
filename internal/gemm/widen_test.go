package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/guardtest"
)

// randHalves returns n random bfloat16 bit patterns, NaNs and subnormals
// included: widening must move every one's bits exactly.
func randHalves(rng *rand.Rand, n int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		s[i] = uint16(rng.Uint32())
	}
	return s
}

func widened(s []uint16) []float32 {
	f := make([]float32, len(s))
	bf16.Decode(f, s)
	return f
}

// checkWiden runs tr.widen on src16 and transposeGo on its widening, into
// copies of dst, and fails unless they agree bit for bit.
func checkWiden(t *testing.T, tr *transposer, dst []float32, ldd, lanes int, src16 []uint16, lds, h, kb int) {
	t.Helper()
	want := append([]float32(nil), dst...)
	tr.widen(dst, ldd, lanes, src16, lds, h, kb)
	transposeGo(want, ldd, lanes, widened(src16), lds, h, kb)
	if i := sameBits(dst, want); i >= 0 {
		t.Fatalf("%s lanes=%d h=%d kb=%d ldd=%d lds=%d: dst[%d] = %#x, want %#x", tr.name, lanes, h, kb, ldd, lds, i,
			math.Float32bits(dst[i]), math.Float32bits(want[i]))
	}
}

// widening lists the transposers that widen bf16 as they move it.
func widening() []*transposer {
	var ts []*transposer
	for _, tr := range transposers() {
		if tr.widen != nil {
			ts = append(ts, tr)
		}
	}
	return ts
}

// TestWideningTransposers checks every widening transposer against
// transposeGo on the widened block, bit for bit, over every h ≤ lanes ≤ 16
// and strip tail, with strides past lanes and kb (odd ones too, so that
// rows start mid-word) whose gaps in dst must stay untouched.
func TestWideningTransposers(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	if len(widening()) == 0 {
		t.Fatal("no widening transposer")
	}
	for _, tr := range widening() {
		for lanes := 1; lanes <= 16; lanes++ {
			for h := 1; h <= lanes; h++ {
				for _, kb := range []int{1, 5, 7, 8, 9, 15, 16, 19, 31, 48, 67} {
					ldd, lds := lanes+rng.IntN(3), kb+rng.IntN(3)
					checkWiden(t, tr, randBits(rng, (kb-1)*ldd+lanes), ldd, lanes, randHalves(rng, (h-1)*lds+kb), lds, h, kb)
				}
			}
		}
	}
}

// TestWideningTransposerGuardPage runs every widening transposer on
// operands that end at an inaccessible page, with columns apart and back
// to back (ldd = lanes, as packing's panels are).
func TestWideningTransposerGuardPage(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, tr := range widening() {
		for _, lanes := range []int{3, 5, 6, 7, 8, 11, 16} {
			for _, h := range []int{1, lanes - 1, lanes} {
				for _, kb := range []int{1, 7, 8, 9, 17, 255} {
					for _, gap := range []int{0, 2} {
						if h < 1 {
							continue
						}
						ldd, lds := lanes+gap, kb+3
						src := guardtest.Uint16s(t, (h-1)*lds+kb)
						copy(src, randHalves(rng, len(src)))
						dst := guardtest.Float32s(t, (kb-1)*ldd+lanes)
						copy(dst, randBits(rng, len(dst)))
						checkWiden(t, tr, dst, ldd, lanes, src, lds, h, kb)
					}
				}
			}
		}
	}
}

// TestGemmBF16Convert checks the conversion path bit for bit: GemmBF16
// with convertBF16 must give Gemm's result on the widened operands, with
// every float32 micro-kernel and every transposer, widening as it packs
// or (widen off) widening each block first, in every form, with ragged
// shapes, odd strides and reductions split across workers.
func TestGemmBF16Convert(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	var trs []*transposer
	for _, tr := range transposers() {
		trs = append(trs, tr, &transposer{name: tr.name + " (widen off)", run: tr.run})
	}
	shapes := []shape{{1, 1, 1, 0}, {7, 5, 3, 1}, {13, 33, 17, 3}, {145, 97, 300, 7}, {293, 7, 11, 2},
		{6, 16, 9, 0}, {40, 48, 1025, 2}, {17, 40, 2053, 1}}
	for _, s := range shapes {
		for _, form := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			transA, transB := form[0], form[1]
			m, n, k := s.m, s.n, s.k
			ar, ac, br, bc := storedShapes(transA, transB, m, n, k)
			lda, ldb, ldc := ac+s.pad, bc+s.pad, n+s.pad
			a, b := randHalves(rng, (ar-1)*lda+ac), randHalves(rng, (br-1)*ldb+bc)
			// Finite values, so that NaN ≠ NaN does not hide a difference.
			for _, h := range [][]uint16{a, b} {
				for i := range h {
					h[i] &= 0xbfff
				}
			}
			a32, b32 := widened(a), widened(b)
			orig := randSlice(rng, m*ldc)
			for _, acc := range []bool{false, true} {
				for _, kern := range kernels() {
					want := append([]float32(nil), orig...)
					withKernel(kern, func() { Gemm(transA, transB, m, n, k, a32, lda, b32, ldb, want, ldc, acc) })
					for _, tr := range trs {
						c := append([]float32(nil), orig...)
						withKernel(kern, func() {
							withBF16Kernel(convertBF16, func() {
								withTransposer(tr, func() { GemmBF16(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, acc) })
							})
						})
						if i := sameBits(c, want); i >= 0 {
							t.Fatalf("%s: c[%d] = %v, want %v", fmt.Sprintf("kernel %s, transpose %s, %v transA=%v transB=%v acc=%v",
								kern.name, tr.name, s, transA, transB, acc), i, c[i], want[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkWideningTransposer packs a cached mcBlock-row block of a bf16
// operand with each widening transposer, alternated pass by pass with the
// same transposer packing the float32 block (lanes = 6, packA's panels
// for the AVX2 kernel; 16, packB's with transB): it reports each one's
// best ns per value and the float32-over-bf16 ratio of the best times.
func BenchmarkWideningTransposer(b *testing.B) {
	rng := rand.New(rand.NewPCG(37, 38))
	for _, tr := range widening() {
		for _, kb := range []int{128, 256} {
			for _, lanes := range []int{6, 16} {
				src16 := randHalves(rng, mcBlock*kb)
				for i := range src16 {
					src16[i] &= 0xbfff
				}
				src32 := widened(src16)
				dst := make([]float32, roundUp(mcBlock, lanes)*kb)
				pass := func(widen bool) float64 {
					t0 := time.Now()
					for r := 0; r < mcBlock; r += lanes {
						h := min(lanes, mcBlock-r)
						if widen {
							tr.widen(dst[r*kb:], lanes, lanes, src16[r*kb:], kb, h, kb)
						} else {
							tr.run(dst[r*kb:], lanes, lanes, src32[r*kb:], kb, h, kb)
						}
					}
					return time.Since(t0).Seconds()
				}
				b.Run(fmt.Sprintf("%s/kb=%d/lanes=%d", tr.name, kb, lanes), func(b *testing.B) {
					best := [2]float64{math.Inf(1), math.Inf(1)}
					for b.Loop() {
						best[0] = min(best[0], pass(false))
						best[1] = min(best[1], pass(true))
					}
					n := float64(mcBlock * kb)
					b.ReportMetric(best[0]*1e9/n, "fp32-ns/value")
					b.ReportMetric(best[1]*1e9/n, "bf16-ns/value")
					b.ReportMetric(best[0]/best[1], "ratio")
				})
			}
		}
	}
}
