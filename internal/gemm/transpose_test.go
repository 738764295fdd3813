package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// packTransposeOld is packTranspose before the transposers: one row at a
// time, a strided scalar store per value. It is the reference the
// transposers are checked against and the baseline of the benchmarks.
func packTransposeOld(dst, src []float32, ld, row0, col0, w, kb, width int) {
	dst = dst[:kb*width]
	for r := 0; r < w; r++ {
		o := (row0+r)*ld + col0
		row := src[o : o+kb]
		for s, v := range row {
			dst[s*width+r] = v
		}
	}
	if w < width {
		for s := 0; s < kb; s++ {
			clear(dst[s*width+w : s*width+width])
		}
	}
}

// oldTransposer is packTransposeOld as a transposer, so that benchmarks can
// run Gemm with the old packing.
var oldTransposer = &transposer{name: "old", run: func(dst []float32, ldd, lanes int, src []float32, lds, h, kb int) {
	for r := 0; r < h; r++ {
		for s, v := range src[r*lds : r*lds+kb] {
			dst[s*ldd+r] = v
		}
	}
	for s := 0; s < kb; s++ {
		clear(dst[s*ldd+h : s*ldd+lanes])
	}
}}

// withTransposer runs f with tr as the active transposer.
func withTransposer(tr *transposer, f func()) {
	saved := activeT
	activeT = tr
	defer func() { activeT = saved }()
	f()
}

// randBits fills a slice with random bit patterns, NaNs and denormals
// included, so that a transposer that rounds or canonicalises is caught.
func randBits(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = math.Float32frombits(rng.Uint32())
	}
	return s
}

func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestPackTranspose checks packTranspose with every transposer against
// packTransposeOld: kernel widths and odd ones, ragged panels (w < width,
// padded with zeros), every strip tail, offsets into a strided source, and
// a destination full of garbage that must be overwritten exactly.
func TestPackTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tr := range transposers() {
		for _, width := range []int{1, 4, 6, 8, 12, 15, 16, 17, 24, 32, 33} {
			for _, kb := range []int{0, 1, 2, 7, 15, 16, 17, 31, 32, 33, 64, 255, 256} {
				for _, w := range []int{1, 2, width / 2, width - 1, width} {
					if w < 1 || w > width {
						continue
					}
					row0, col0 := rng.IntN(3), rng.IntN(5)
					ld := col0 + kb + rng.IntN(4)
					// src ends at the last value read.
					src := randBits(rng, (row0+w-1)*ld+col0+kb)
					got := randBits(rng, kb*width+3)
					want := append([]float32(nil), got...)
					withTransposer(tr, func() { packTranspose(got, src, ld, row0, col0, w, kb, width) })
					packTransposeOld(want, src, ld, row0, col0, w, kb, width)
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("%s width=%d kb=%d w=%d ld=%d: dst[%d] = %#x, want %#x", tr.name, width, kb, w, ld, i,
							math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestTransposerTwins checks each transposer against transposeGo directly,
// over every h ≤ lanes ≤ 16 and strip tail (of 8 and 16 columns), with
// strides past lanes and kb whose gaps in dst must stay untouched.
func TestTransposerTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tr := range transposers() {
		for lanes := 1; lanes <= 16; lanes++ {
			for h := 1; h <= lanes; h++ {
				for _, kb := range []int{1, 5, 7, 8, 9, 15, 16, 19, 31, 48, 67} {
					ldd, lds := lanes+rng.IntN(3), kb+rng.IntN(3)
					src := randBits(rng, (h-1)*lds+kb)
					got := randBits(rng, (kb-1)*ldd+lanes)
					want := append([]float32(nil), got...)
					tr.run(got, ldd, lanes, src, lds, h, kb)
					transposeGo(want, ldd, lanes, src, lds, h, kb)
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("%s lanes=%d h=%d kb=%d: dst[%d] = %#x, want %#x", tr.name, lanes, h, kb, i,
							math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestGemmTransposers runs the Gemm tests' shapes with every transposer:
// C must be bit-identical whichever packs A and B.
func TestGemmTransposers(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, s := range []shape{{13, 33, 17, 3}, {145, 97, 300, 7}, {293, 7, 11, 2}, {300, 70, 767, 1}} {
		for _, form := range [3][2]bool{{false, false}, {false, true}, {true, true}} {
			transA, transB := form[0], form[1]
			ar, ac := s.m, s.k
			if transA {
				ar, ac = s.k, s.m
			}
			br, bc := s.k, s.n
			if transB {
				br, bc = s.n, s.k
			}
			lda, ldb, ldc := ac+s.pad, bc+s.pad, s.n+s.pad
			a := randSlice(rng, ar*lda-s.pad)
			b := randSlice(rng, br*ldb-s.pad)
			for _, kern := range kernels() {
				var want []float32
				for _, tr := range append(transposers(), oldTransposer) {
					c := make([]float32, s.m*ldc)
					withKernel(kern, func() {
						withTransposer(tr, func() { Gemm(transA, transB, s.m, s.n, s.k, a, lda, b, ldb, c, ldc, false) })
					})
					if want == nil {
						want = c
					} else if i := sameBits(c, want); i >= 0 {
						t.Fatalf("%s %s %v %v: c[%d] = %v, want %v", kern.name, tr.name, s, form, i, c[i], want[i])
					}
				}
			}
		}
	}
}

func TestTransposePanics(t *testing.T) {
	for _, tr := range transposers() {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic for a too-short src", tr.name)
				}
			}()
			tr.run(make([]float32, 64), 4, 4, make([]float32, 20), 8, 3, 5)
		}()
	}
}

// BenchmarkPackA times packA over a whole m×k matrix as rowTask walks it
// (mcBlock×kcBlock blocks, mr-row panels) with the old packing and each
// transposer; "hot" repacks one block that stays in cache, isolating the
// transposition from the memory it streams.
func BenchmarkPackA(b *testing.B) {
	rng := rand.New(rand.NewPCG(17, 18))
	kern := active
	for _, sh := range []struct{ m, k int }{{13752, 64}, {169343, 128}, {13752, 767}} {
		a := randSlice(rng, sh.m*sh.k)
		for _, hot := range []bool{false, true} {
			m := sh.m
			if hot {
				m = mcBlock
			}
			for _, tr := range append([]*transposer{oldTransposer}, transposers()...) {
				name := fmt.Sprintf("impl=%s/mr=%d/a=%dx%d", tr.name, kern.mr, m, sh.k)
				if hot {
					name = fmt.Sprintf("impl=%s/mr=%d/a=hot-%dx%d", tr.name, kern.mr, m, min(sh.k, kcBlock))
				}
				b.Run(name, func(b *testing.B) {
					p := problem{kern: kern, m: m, k: sh.k, a: a, lda: sh.k}
					buf := make([]float32, roundUp(mcBlock, kern.mr)*kcBlock)
					var ws workspace
					withTransposer(tr, func() {
						for b.Loop() {
							for ic := 0; ic < m; ic += mcBlock {
								mb := min(mcBlock, m-ic)
								for pc := 0; pc < sh.k; pc += kcBlock {
									kb := min(kcBlock, sh.k-pc)
									p.packA(&ws, buf, ic, mb, pc, kb)
									if hot {
										break
									}
								}
							}
						}
					})
					elems := m * sh.k
					if hot {
						elems = m * min(sh.k, kcBlock)
					}
					b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(elems), "ns/elem")
				})
			}
		}
	}
}

// BenchmarkGemmPacking times X·W (nn) and dY·Wᵀ (nt) at the training
// shapes with the old packing and each transposer, in one binary so that
// ratios are taken from the same run.
func BenchmarkGemmPacking(b *testing.B) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, sh := range []struct{ m, k, n int }{{13752, 64, 64}, {169343, 128, 64}, {13752, 767, 64}} {
		a := randSlice(rng, sh.m*sh.k)
		w := randSlice(rng, sh.k*sh.n)
		c := make([]float32, sh.m*sh.n)
		for _, transB := range []bool{false, true} {
			form := "nn"
			if transB {
				form = "nt"
			}
			for _, tr := range append([]*transposer{oldTransposer}, transposers()...) {
				b.Run(fmt.Sprintf("kernel=%s/form=%s/impl=%s/mxkxn=%dx%dx%d", active.name, form, tr.name, sh.m, sh.k, sh.n), func(b *testing.B) {
					ldb := sh.n
					if transB {
						ldb = sh.k
					}
					withTransposer(tr, func() {
						cpu0 := sysstat.CPUTime().Seconds()
						for b.Loop() {
							Gemm(false, transB, sh.m, sh.n, sh.k, a, sh.k, w, ldb, c, sh.n, false)
						}
						flops := 2 * float64(sh.m) * float64(sh.n) * float64(sh.k) * float64(b.N)
						b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						if cpu := sysstat.CPUTime().Seconds() - cpu0; cpu > 0 {
							b.ReportMetric(flops/cpu/1e9, "GFLOP/cpu-s")
						}
					})
				})
			}
		}
	}
}

// BenchmarkTransposerPair alternates the best transposer with transposeGo
// pass by pass, so that a shared machine's load falls on both, packing an
// m×k matrix into panels of `lanes` rows as packA (lanes = mr) and packB
// with transB (lanes = nr) do: "hot" repacks one mcBlock-row block that
// stays in cache, the others stream the whole matrix from memory. It
// reports each one's best ns per value and the Go-over-best ratios of the
// best wall times and of all CPU time.
func BenchmarkTransposerPair(b *testing.B) {
	rng := rand.New(rand.NewPCG(25, 26))
	best := bestTransposer()
	for _, sh := range []struct{ m, k int }{{100000, 64}, {169343, 128}} {
		a := randSlice(rng, sh.m*sh.k)
		for _, lanes := range []int{6, 16} {
			for _, hot := range []bool{true, false} {
				m, reps, size := sh.m, 1, fmt.Sprintf("%dx%d", sh.m, sh.k)
				if hot {
					m, reps, size = mcBlock, 16, fmt.Sprintf("hot-%dx%d", mcBlock, sh.k)
				}
				buf := make([]float32, roundUp(mcBlock, lanes)*kcBlock)
				pass := func() {
					for range reps {
						for ic := 0; ic < m; ic += mcBlock {
							mb := min(mcBlock, m-ic)
							for pc := 0; pc < sh.k; pc += kcBlock {
								kb := min(kcBlock, sh.k-pc)
								for r := 0; r < mb; r += lanes {
									packTranspose(buf[r*kb:r*kb+lanes*kb], a, sh.k, ic+r, pc, min(lanes, mb-r), kb, lanes)
								}
							}
						}
					}
				}
				b.Run(fmt.Sprintf("impl=%s/lanes=%d/a=%s", best.name, lanes, size), func(b *testing.B) {
					trs := []*transposer{best, goTransposer}
					var wall, cpu [2]float64
					wall[0], wall[1] = math.Inf(1), math.Inf(1)
					for b.Loop() {
						for i, tr := range trs {
							withTransposer(tr, func() {
								c0, t0 := sysstat.CPUTime(), time.Now()
								pass()
								wall[i] = min(wall[i], time.Since(t0).Seconds())
								cpu[i] += (sysstat.CPUTime() - c0).Seconds()
							})
						}
					}
					elems := float64(reps * m * sh.k)
					b.ReportMetric(wall[0]*1e9/elems, best.name+"-ns/elem")
					b.ReportMetric(wall[1]*1e9/elems, "generic-ns/elem")
					b.ReportMetric(wall[1]/wall[0], "wall-ratio")
					if cpu[0] > 0 {
						b.ReportMetric(cpu[1]/cpu[0], "cpu-ratio")
					}
				})
			}
		}
	}
}

// BenchmarkGemmTransposerPair times BenchmarkGemm's shapes that pack by
// transposing (gemm_nn packs A, gemm_nt A and B) with the best transposer
// and with transposeGo, alternating call by call; wall-ratio above 1 means
// transposeGo is slower.
func BenchmarkGemmTransposerPair(b *testing.B) {
	const rows = 100000
	rng := rand.New(rand.NewPCG(27, 28))
	best := bestTransposer()
	for _, d := range []int{128, 256} {
		big, out, small := randSlice(rng, rows*d), make([]float32, rows*d), randSlice(rng, d*d)
		for _, transB := range []bool{false, true} {
			form := "gemm_nn"
			if transB {
				form = "gemm_nt"
			}
			gemm := func(tr *transposer) func() {
				return func() {
					withTransposer(tr, func() { Gemm(false, transB, rows, d, d, big, d, small, d, out, d, false) })
				}
			}
			b.Run(fmt.Sprintf("%s/%s/%s/%dx%d", active.name, best.name, form, rows, d), func(b *testing.B) {
				reportAlternated(b, 2*float64(rows)*float64(d)*float64(d), "generic", best.name, gemm(goTransposer), gemm(best))
			})
		}
	}
}
