package gemm

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/guardtest"
)

func withBF16Kernel(kern *bfKernel, f func()) {
	saved := activeBF16
	activeBF16 = kern
	defer func() { activeBF16 = saved }()
	f()
}

// randBF16 returns n bfloat16s of values in (-1, 1), and a few zeros.
func randBF16(rng *rand.Rand, n int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		if rng.IntN(17) != 0 {
			s[i] = bf16.FromFloat32(rng.Float32()*2 - 1)
		}
	}
	return s
}

func randPairs(rng *rand.Rand, n int) []uint32 {
	h := randBF16(rng, 2*n)
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(h[2*i]) | uint32(h[2*i+1])<<16
	}
	return s
}

// TestBF16MicroKernels checks each bf16 micro-kernel against the pure-Go
// twin, bit for bit: the twin follows VDPBF16PS's order of additions and
// rounding.
func TestBF16MicroKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, kern := range bfKernels() {
		if kern.run == nil {
			continue
		}
		stepCounts := []int{1, 2, 3, 4, 5, 7, 8, 13, 64, 257}
		if kern.stepAlign > 1 {
			stepCounts = []int{16, 32, 48, 64, 272}
		}
		for _, st := range stepCounts {
			for _, load := range []bool{false, true} {
				mr, nr := kern.mr, kern.nr
				ldc := nr + 3
				a := randPairs(rng, mr*st)
				b := randPairs(rng, nr*st)
				c := randSlice(rng, mr*ldc)
				c0 := append([]float32(nil), c...)
				want := append([]float32(nil), c...)
				kern.run(st, &a[0], &b[0], &c[0], ldc, load, 0)
				twinOf(kern)(mr, nr, st, a, b, want, ldc, load)
				if kern.rowsA {
					checkTilesBound(t, kern.name, mr, nr, st, a, b, c, c0, ldc, load)
				}
				if kern.name == "amx" {
					continue // the twin agrees to the bound above, not bit for bit
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s steps=%d load=%v: c[%d] = %v, want %v", kern.name, st, load, i, c[i], want[i])
					}
				}
			}
		}
	}
}

// checkTilesBound checks a tile kernel's c against the exact sums: within
// (2·steps+1)·2⁻²⁴·(|c₀|+Σ|a·b|) of c₀ + a·b, c₀ being what c held (or 0
// without load). Intel's pseudocode of TDPBF16PS is a chain of float32
// additions, which the twin follows, but the hardware does not round as
// it says, so the AMX kernel and its twin agree to that bound, not bit
// for bit. The columns between nr and ldc keep their values.
func checkTilesBound(t *testing.T, name string, mr, nr, st int, a, b []uint32, c, c0 []float32, ldc int, load bool) {
	t.Helper()
	for i := 0; i < mr; i++ {
		for j := 0; j < ldc; j++ {
			if j >= nr {
				if math.Float32bits(c[i*ldc+j]) != math.Float32bits(c0[i*ldc+j]) {
					t.Fatalf("%s steps=%d: c[%d,%d] beyond the tile changed", name, st, i, j)
				}
				continue
			}
			var start, dot, abs float64
			if load {
				start = float64(c0[i*ldc+j])
			}
			for s := 0; s < st; s++ {
				p, q := a[i*st+s], b[s*nr+j]
				for _, x := range [2]float64{
					float64(widenDAZ(uint16(p))) * float64(widenDAZ(uint16(q))),
					float64(widenDAZ(uint16(p>>16))) * float64(widenDAZ(uint16(q>>16))),
				} {
					dot += x
					abs += math.Abs(x)
				}
			}
			tol := float64(2*st+1) * 0x1p-24 * (math.Abs(start) + abs)
			if d := math.Abs(float64(c[i*ldc+j]) - (start + dot)); d > tol {
				t.Fatalf("%s steps=%d load=%v: c[%d,%d] = %v, exact %v: off by %.3g > %.3g", name, st, load, i, j, c[i*ldc+j], start+dot, d, tol)
			}
		}
	}
}

// twinOf is the pure-Go twin of kern's arithmetic and a-panel layout.
func twinOf(kern *bfKernel) func(mr, nr, steps int, a, b []uint32, c []float32, ldc int, load bool) {
	if kern.rowsA {
		return microTilesGo
	}
	return microBF16Go
}

// TestBF16MicroKernelSubnormals: subnormal operands read as zero and
// subnormal sums flush to zero, in the assembly as in the twin.
func TestBF16MicroKernelSubnormals(t *testing.T) {
	for _, kern := range bfKernels() {
		if kern.run == nil {
			continue
		}
		mr, nr, st := kern.mr, kern.nr, kern.steps(1)
		a := make([]uint32, mr*st) // one step of pairs, the rest zero
		b := make([]uint32, nr*st)
		rowStride := 1 // a's rows are lanes of one step, or (rowsA) rows of st steps
		if kern.rowsA {
			rowStride = st
		}
		for i := 0; i < mr; i++ {
			a[i*rowStride] = 0x0040<<16 | 0x3f80 // hi: a subnormal; lo: 1
		}
		for j := 0; j < nr; j++ {
			b[j] = 0x3f80<<16 | 0x0080 // hi: 1; lo: 2^-126, the smallest normal
		}
		b[1] = 0x3f80<<16 | 0x8040 // lo: a negative subnormal
		b[2] = 0x3f00<<16 | 0x3f80 // hi: 0.5; lo: 1
		c := make([]float32, mr*nr)
		want := make([]float32, mr*nr)
		kern.run(st, &a[0], &b[0], &c[0], nr, false, 0)
		twinOf(kern)(mr, nr, st, a, b, want, nr, false)
		for i := range c {
			if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: c[%d] = %#x, want %#x", kern.name, i, math.Float32bits(c[i]), math.Float32bits(want[i]))
			}
		}
		if want[0] != 0x1p-126 || want[1] != 0 || want[2] != 1 {
			t.Fatalf("twin: %v, want [2^-126 0 1 …]", want[:3])
		}
	}
}

// evex encodes the register form of an EVEX.512.0F38.W0 instruction:
// opcode op, prefix pp (1 = 66, 2 = F3), destination dst, first source
// (vvvv) s1, second source (r/m) s2, no mask.
func evex(op, pp byte, dst, s1, s2 int) []byte {
	inv := func(x, bit int) byte { return byte(^x>>bit) & 1 }
	return []byte{
		0x62,
		inv(dst, 3)<<7 | inv(s2, 4)<<6 | inv(s2, 3)<<5 | inv(dst, 4)<<4 | 2,
		byte(^s1&15)<<3 | 4 | pp,
		2<<5 | inv(s1, 4)<<3,
		op,
		0xc0 | byte(dst&7)<<3 | byte(s2&7),
	}
}

// TestBF16Encodings checks every hand-encoded VDPBF16PS in bf16_amd64.s
// against evex, and evex itself against the Go assembler's own encoding of
// VFMADD231PS (the same EVEX form with opcode B8 and prefix 66), which
// TestEVEXMatchesAssembler reads from a compiled function.
func TestBF16Encodings(t *testing.T) {
	f, err := os.Open("bf16_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	comment := regexp.MustCompile(`^// DP(\d+): VDPBF16PS zmm(\d+), zmm(\d+), zmm(\d+)$`)
	define := regexp.MustCompile(`^#define DP(\d+) (.*)$`)
	var want []byte
	var name string
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := comment.FindStringSubmatch(line); m != nil {
			d, _ := strconv.Atoi(m[2])
			s1, _ := strconv.Atoi(m[3])
			s2, _ := strconv.Atoi(m[4])
			// Register roles the kernel relies on: accumulator n, the
			// broadcast a of row n/2 and b's half n%2.
			n, _ := strconv.Atoi(m[1])
			if d != n || s1 != 26+(n/2)%6 || s2 != 24+n%2 {
				t.Errorf("DP%d uses zmm%d, zmm%d, zmm%d", n, d, s1, s2)
			}
			want, name = evex(0x52, 2, d, s1, s2), "DP"+m[1]
			continue
		}
		if m := define.FindStringSubmatch(line); m != nil && strings.HasPrefix(m[2], "BYTE") {
			if "DP"+m[1] != name {
				t.Fatalf("#define DP%s lacks its comment", m[1])
			}
			var got []byte
			for _, f := range strings.Split(m[2], ";") {
				v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(f), "BYTE $0x"), 16, 8)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got = append(got, byte(v))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s = % x, want % x", name, got, want)
			}
			found++
		}
	}
	if found != 24 {
		t.Errorf("found %d encodings, want 24", found)
	}
}

// refBF16 computes op(A)·op(B) (+ C) in float64 and, per element, the
// bound on float32 accumulation error: (k+4)·2⁻²⁴·(Σ|a·b| + |c|), the
// first-order bound for k+1 rounded additions (blocks and chunks add a
// few more), with products exact.
func refBF16(transA, transB bool, m, n, k int, a []uint16, lda int, b []uint16, ldb int, c []float32, ldc int, accumulate bool) (want, tol []float64) {
	want, tol = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, abs float64
			if accumulate {
				s, abs = float64(c[i*ldc+j]), math.Abs(float64(c[i*ldc+j]))
			}
			for p := 0; p < k; p++ {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				x := float64(bf16.ToFloat32(a[ai])) * float64(bf16.ToFloat32(b[bi]))
				s += x
				abs += math.Abs(x)
			}
			want[i*n+j], tol[i*n+j] = s, float64(k+4)*0x1p-24*abs
		}
	}
	return want, tol
}

func checkGemmBF16(t *testing.T, rng *rand.Rand, s shape, transA, transB, accumulate bool) {
	t.Helper()
	m, n, k := s.m, s.n, s.k
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+s.pad, bc+s.pad, n+s.pad
	a := randBF16(rng, max(0, ar*lda-s.pad))
	b := randBF16(rng, max(0, br*ldb-s.pad))
	orig := randSlice(rng, m*ldc)
	want, tol := refBF16(transA, transB, m, n, k, a, lda, b, ldb, orig, ldc, accumulate)
	c := make([]float32, len(orig))
	for _, kern := range bfKernels() {
		for _, pk := range packersFor(kern) {
			z, tr := pk.z, pk.tr
			for _, f32 := range float32KernelsFor(kern) {
				copy(c, orig)
				withKernel(f32, func() {
					withBF16Kernel(kern, func() {
						withZipper(z, func() {
							withTransposer(tr, func() { GemmBF16(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate) })
						})
					})
				})
				checkBF16Result(t, c, orig, want, tol, m, n, ldc, fmt.Sprintf("%s (float32 kernel %s, zip %s, transpose %s) %v transA=%v transB=%v acc=%v", kern.name, f32.name, z.name, tr.name, s, transA, transB, accumulate))
			}
		}
	}
}

// float32KernelsFor lists the float32 micro-kernels to run kern with:
// every one for the conversion, which multiplies on them, else the active.
func float32KernelsFor(kern *bfKernel) []*microKernel {
	if kern.run == nil {
		return kernels()
	}
	return []*microKernel{active}
}

// checkBF16Result checks c (m×n, stride ldc) against want ± tol and its
// padding columns against orig.
func checkBF16Result(t *testing.T, c, orig []float32, want, tol []float64, m, n, ldc int, what string) {
	t.Helper()
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= n {
				if got != orig[i*ldc+j] {
					t.Fatalf("%s: padding c[%d,%d] changed", what, i, j)
				}
				continue
			}
			if w := want[i*n+j]; math.Abs(float64(got)-w) > tol[i*n+j] {
				t.Fatalf("%s: c[%d,%d] = %v, want %v ± %.3g", what, i, j, got, w, tol[i*n+j])
			}
		}
	}
}

type packers struct {
	z  *zipper
	tr *transposer
}

// packersFor lists the packing routines to run kern with: every zipper and
// transposer with the widest kernel, the active ones with the others
// (packing does not depend on the kernel beyond its tile).
func packersFor(kern *bfKernel) []packers {
	if kern != bfKernels()[0] || kern.run == nil {
		return []packers{{activeZ, activeT}}
	}
	var ps []packers
	for _, z := range zippers() {
		for _, tr := range transposers() {
			ps = append(ps, packers{z, tr})
		}
	}
	return ps
}

func withZipper(z *zipper, f func()) {
	saved := activeZ
	activeZ = z
	defer func() { activeZ = saved }()
	f()
}

// TestGemmBF16 runs every kernel, zipper and transposer on edge shapes: m,
// n and k not multiples of the tile or the block, k odd (a half pair),
// strides odd and even, and long reductions split across workers.
func TestGemmBF16(t *testing.T) {
	shapes := []shape{
		{0, 5, 3, 0}, {5, 0, 3, 1}, {4, 5, 0, 0}, {4, 5, 0, 2}, {1, 1, 1, 0},
		{7, 5, 3, 0}, {12, 32, 16, 0}, {13, 33, 17, 3}, {12, 32, 2, 0}, {6, 16, 4, 1},
		{31, 61, 257, 5}, {144, 64, 512, 0}, {145, 97, 513, 7}, {293, 7, 11, 2},
		{3, 293, 101, 0}, {40, 48, 1025, 2},
		{50, 37, 4099, 1}, {17, 40, 2053, 0}, {48, 40, 4100, 0},
	}
	if testing.Short() {
		shapes = shapes[:len(shapes)-2]
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for range 4 {
		shapes = append(shapes, shape{1 + rng.IntN(200), 1 + rng.IntN(200), 1 + rng.IntN(200), rng.IntN(9)})
	}
	for _, s := range shapes {
		for _, form := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, acc := range []bool{false, true} {
				checkGemmBF16(t, rng, s, form[0], form[1], acc)
			}
		}
	}
}

// TestGemmBF16AgainstFloat32 bounds the error of computing in bf16 what
// Gemm computes in float32: rounding each input to bf16 moves it by at
// most 2⁻⁹ relative, so a product by at most 2⁻⁸ (and a little), and the
// result by 2⁻⁸·Σ|a·b| plus the accumulation bound.
func TestGemmBF16AgainstFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const m, n, k = 70, 45, 301
	a32, b32 := randSlice(rng, m*k), randSlice(rng, k*n)
	a, b := make([]uint16, m*k), make([]uint16, k*n)
	bf16.Encode(a, a32)
	bf16.Encode(b, b32)
	c := make([]float32, m*n)
	for _, kern := range bfKernels() {
		withBF16Kernel(kern, func() { GemmBF16(false, false, m, n, k, a, k, b, n, c, n, false) })
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var exact, abs float64
				for p := 0; p < k; p++ {
					x := float64(a32[i*k+p]) * float64(b32[p*n+j])
					exact += x
					abs += math.Abs(x)
				}
				tol := (0x1.01p-8 + float64(k+4)*0x1p-24) * abs
				if d := math.Abs(float64(c[i*n+j]) - exact); d > tol {
					t.Fatalf("%s: c[%d,%d] = %v, float64 of the float32 inputs %v: off by %.3g > %.3g", kern.name, i, j, c[i*n+j], exact, d, tol)
				}
			}
		}
	}
}

func TestGemmBF16Allocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, tc := range []struct {
		name           string
		transA, transB bool
		m, n, k        int
	}{
		{"nn", false, false, 600, 64, 64},
		{"nn/odd-stride", false, false, 600, 64, 63},
		{"nt", false, true, 600, 64, 64},
		{"tn", true, false, 64, 64, 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := randBF16(rng, tc.m*tc.k)
			b := randBF16(rng, tc.k*tc.n)
			c := make([]float32, tc.m*tc.n)
			lda, ldb := tc.k, tc.n
			if tc.transA {
				lda = tc.m
			}
			if tc.transB {
				ldb = tc.k
			}
			run := func() { GemmBF16(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, b, ldb, c, tc.n, false) }
			run()
			if allocs := testing.AllocsPerRun(10, run); allocs > 0 {
				t.Errorf("%s: %v allocations per call, want 0", KernelBF16(), allocs)
			}
		})
	}
}

func TestGemmBF16PanicsOnShortSlice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a too-short B")
		}
	}()
	GemmBF16(false, false, 4, 4, 4, make([]uint16, 16), 4, make([]uint16, 15), 4, make([]float32, 16), 4, false)
}

// TestGemmBF16GuardPage runs every kernel, zipper and transposer on
// operands that end at an inaccessible page: packing must read nothing
// past the last row, whatever the form and however ragged the shape.
func TestGemmBF16GuardPage(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	// The last shapes fill whole 32×32 tiles up to C's end.
	for _, s := range []shape{{1, 1, 1, 0}, {13, 33, 17, 0}, {5, 17, 3, 1}, {12, 32, 2, 0}, {30, 20, 31, 1}, {64, 32, 40, 0}, {96, 64, 33, 0}} {
		for _, form := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			transA, transB := form[0], form[1]
			m, n, k := s.m, s.n, s.k
			ar, ac, br, bc := m, k, k, n
			if transA {
				ar, ac = k, m
			}
			if transB {
				br, bc = n, k
			}
			lda, ldb := ac+s.pad, bc+s.pad
			a := guardtest.Uint16s(t, (ar-1)*lda+ac)
			b := guardtest.Uint16s(t, (br-1)*ldb+bc)
			copy(a, randBF16(rng, len(a)))
			copy(b, randBF16(rng, len(b)))
			want, tol := refBF16(transA, transB, m, n, k, a, lda, b, ldb, nil, n, false)
			c := guardtest.Float32s(t, m*n)
			for _, kern := range bfKernels() {
				for _, pk := range packersFor(kern) {
					withBF16Kernel(kern, func() {
						withZipper(pk.z, func() {
							withTransposer(pk.tr, func() { GemmBF16(transA, transB, m, n, k, a, lda, b, ldb, c, n, false) })
						})
					})
					for i, w := range want {
						if math.Abs(float64(c[i])-w) > tol[i] {
							t.Fatalf("%s (zip %s, transpose %s) %v %v: c[%d] = %v, want %v", kern.name, pk.z.name, pk.tr.name, s, form, i, c[i], w)
						}
					}
				}
			}
		}
	}
}

// TestZippers checks every zipper against zipGo, bit for bit, with the
// rows ending at an inaccessible page: widths and valid columns on both
// sides of the 32-lane steps.
func TestZippers(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, z := range zippers() {
		for _, width := range []int{1, 12, 16, 31, 32, 33, 64, 100} {
			for _, h := range []int{1, width / 2, width - 1, width} {
				if h < 1 {
					continue
				}
				for _, st := range []int{1, 2, 5} {
					lds := h + 3
					src := guardtest.Uint16s(t, (2*st-1)*lds+h)
					copy(src, randBF16(rng, len(src)))
					ldd := width + 2
					got := make([]uint32, (st-1)*ldd+width)
					want := make([]uint32, len(got))
					for i := range got {
						got[i], want[i] = 0xdeadbeef, 0xdeadbeef
					}
					z.run(got, ldd, width, src, lds, h, st)
					zipGo(want, ldd, width, src, lds, h, st)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%s width=%d h=%d steps=%d: dst[%d] = %#x, want %#x", z.name, width, h, st, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
