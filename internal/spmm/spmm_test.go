package spmm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// levels lists every kernel level this CPU and build can run, widest first.
func levels() []cpuid.Level {
	var ls []cpuid.Level
	for _, l := range []cpuid.Level{cpuid.AVX512, cpuid.AVX2, cpuid.Generic} {
		if l <= cpuid.Detected && kernelsFor(l).level == l {
			ls = append(ls, l)
		}
	}
	return ls
}

// useLevel switches the kernels for the rest of the test.
func useLevel(t testing.TB, l cpuid.Level) {
	saved := impl
	impl = kernelsFor(l)
	t.Cleanup(func() { impl = saved })
}

type csr struct {
	rows, cols int
	offsets    []int64
	indices    []int32
	values     []float32
}

// randomCSR builds a rows×cols matrix with degrees drawn from [0, maxDeg],
// some rows empty and row heavy (if in range) holding heavyDeg entries.
func randomCSR(rng *rand.Rand, rows, cols, maxDeg, heavy, heavyDeg int, withValues bool) csr {
	m := csr{rows: rows, cols: cols, offsets: make([]int64, rows+1)}
	for i := 0; i < rows; i++ {
		d := rng.IntN(maxDeg + 1)
		if i%7 == 3 {
			d = 0
		}
		if i == heavy {
			d = heavyDeg
		}
		if cols == 0 {
			d = 0
		}
		for k := 0; k < d; k++ {
			m.indices = append(m.indices, int32(rng.IntN(cols)))
			if withValues {
				m.values = append(m.values, rng.Float32()*2-1)
			}
		}
		m.offsets[i+1] = int64(len(m.indices))
	}
	if withValues && m.values == nil {
		m.values = []float32{}
	}
	return m
}

func randomDense(rng *rand.Rand, rows, ld int) []float32 {
	x := make([]float32, rows*ld)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	return x
}

// check compares got with want (float64) to a tolerance scaled by the sum of
// absolute terms, and that padding between rows is untouched.
func check(t *testing.T, name string, got []float32, want, scale []float64, rows, width, ld int, pad float32) {
	t.Helper()
	for i := 0; i < rows; i++ {
		for k := 0; k < ld; k++ {
			g := got[i*ld+k]
			if k >= width {
				if g != pad && i*ld+k < len(got) {
					t.Fatalf("%s: padding y[%d,%d] = %v changed", name, i, k, g)
				}
				continue
			}
			w := want[i*width+k]
			if math.Abs(float64(g)-w) > 1e-5*(scale[i*width+k]+1) {
				t.Fatalf("%s: y[%d,%d] = %v, want %v", name, i, k, g, w)
			}
		}
	}
}

func TestMulCSR(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	widths := []int{1, 3, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 127, 128, 129, 143, 144, 200, 255, 256, 257, 300}
	for _, l := range levels() {
		useLevel(t, l)
		for _, tc := range []struct {
			rows, cols, maxDeg, heavyDeg int
			values                       bool
		}{
			{0, 5, 3, 0, true},
			{1, 1, 1, 0, false},
			{9, 13, 4, 0, true},
			{40, 30, 6, 500, true},
			{257, 64, 20, 2000, false},
			{600, 900, 10, 3000, true},
		} {
			m := randomCSR(rng, tc.rows, tc.cols, tc.maxDeg, tc.rows/2, tc.heavyDeg, tc.values)
			for _, width := range widths {
				for _, extra := range []int{0, 5} {
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("%v/rows=%d/width=%d/ld+%d/acc=%v/values=%v", l, tc.rows, width, extra, acc, tc.values)
						ldx, ldy := width+extra, width+2*extra
						x := randomDense(rng, tc.cols, ldx)
						y := randomDense(rng, tc.rows, ldy)
						const pad = 42
						for i := 0; i < tc.rows; i++ {
							for k := width; k < ldy; k++ {
								y[i*ldy+k] = pad
							}
						}
						want, scale := reference(m, x, ldx, width, y, ldy, acc)
						MulCSR(tc.rows, m.offsets, m.indices, m.values, x, ldx, width, y, ldy, acc)
						check(t, name, y, want, scale, tc.rows, width, ldy, pad)
					}
				}
			}
		}
	}
}

// reference computes A·x (+ y) in float64 and the sum of absolute terms.
func reference(m csr, x []float32, ldx, width int, y []float32, ldy int, acc bool) (want, scale []float64) {
	want = make([]float64, m.rows*width)
	scale = make([]float64, m.rows*width)
	for i := 0; i < m.rows; i++ {
		for k := 0; k < width; k++ {
			if acc {
				want[i*width+k] = float64(y[i*ldy+k])
				scale[i*width+k] = math.Abs(float64(y[i*ldy+k]))
			}
		}
		for p := m.offsets[i]; p < m.offsets[i+1]; p++ {
			v := 1.0
			if m.values != nil {
				v = float64(m.values[p])
			}
			j := int(m.indices[p])
			for k := 0; k < width; k++ {
				term := v * float64(x[j*ldx+k])
				want[i*width+k] += term
				scale[i*width+k] += math.Abs(term)
			}
		}
	}
	return want, scale
}

// transpose returns the CSR form of mᵀ.
func transpose(m csr) csr {
	tr := csr{rows: m.cols, cols: m.rows, offsets: make([]int64, m.cols+1)}
	for _, j := range m.indices {
		tr.offsets[j+1]++
	}
	for j := 0; j < m.cols; j++ {
		tr.offsets[j+1] += tr.offsets[j]
	}
	nnz := len(m.indices)
	tr.indices = make([]int32, nnz)
	if m.values != nil {
		tr.values = make([]float32, nnz)
	}
	next := append([]int64(nil), tr.offsets[:m.cols]...)
	for i := 0; i < m.rows; i++ {
		for p := m.offsets[i]; p < m.offsets[i+1]; p++ {
			j := m.indices[p]
			q := next[j]
			next[j]++
			tr.indices[q] = int32(i)
			if m.values != nil {
				tr.values[q] = m.values[p]
			}
		}
	}
	return tr
}

func TestMulCSRTrans(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	widths := []int{1, 5, 16, 17, 33, 64, 100, 128, 129, 300}
	for _, l := range levels() {
		useLevel(t, l)
		for _, tc := range []struct {
			rows, cols, maxDeg, heavyDeg int
			values                       bool
		}{
			{0, 4, 3, 0, true},
			{3, 0, 3, 0, true},
			{1, 1, 1, 0, false},
			{9, 13, 4, 0, true},
			{300, 200, 12, 1500, false},
			{500, 700, 10, 2000, true},
			{6000, 3000, 12, 5000, true}, // large enough to split narrow widths by rows
		} {
			m := randomCSR(rng, tc.rows, tc.cols, tc.maxDeg, tc.rows/3, tc.heavyDeg, tc.values)
			tr := transpose(m)
			for _, width := range widths {
				if tc.rows > 1000 && width > 17 {
					continue
				}
				for _, extra := range []int{0, 3} {
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("%v/rows=%d/cols=%d/width=%d/ld+%d/acc=%v", l, tc.rows, tc.cols, width, extra, acc)
						ldx, ldy := width+2*extra, width+extra
						x := randomDense(rng, tc.rows, ldx)
						y := randomDense(rng, tc.cols, ldy)
						const pad = -7
						for j := 0; j < tc.cols; j++ {
							for k := width; k < ldy; k++ {
								y[j*ldy+k] = pad
							}
						}
						want, scale := reference(tr, x, ldx, width, y, ldy, acc)
						MulCSRTrans(tc.rows, tc.cols, m.offsets, m.indices, m.values, x, ldx, width, y, ldy, acc)
						check(t, name, y, want, scale, tc.cols, width, ldy, pad)
					}
				}
			}
		}
	}
}

// TestKernelsAgree runs the row kernels directly against the pure-Go twin,
// and every far and streaming variant against the plain kernel, bit for
// bit, accumulating or not.
func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randomCSR(rng, 64, 80, 9, 5, 200, true)
	for _, l := range levels() {
		k := kernelsFor(l)
		for width := 1; width <= 300; width++ {
			x := randomDense(rng, m.cols, width)
			y0 := randomDense(rng, m.rows, width)
			for _, acc := range []bool{true, false} {
				want := append([]float32(nil), y0...)
				generic.rows[0][0](m.offsets, m.indices, m.values, x, width, width, want, width, acc)
				variants := func(i int, y []float32, ld int) {
					k.rows[i/2][i%2](m.offsets, m.indices, m.values, x, width, width, y, ld, acc)
				}
				plain := agreeVariants(t, fmt.Sprintf("%v width %d accumulate %v", l, width, acc), y0, m.rows, width, variants)
				for i := range plain {
					if d := math.Abs(float64(plain[i] - want[i])); d > 1e-4 {
						t.Fatalf("%v width %d: rows kernel [%d] = %v, generic %v", l, width, i, plain[i], want[i])
					}
				}
			}
			xt := randomDense(rng, m.rows, width)
			got := randomDense(rng, m.cols, width)
			want := append([]float32(nil), got...)
			k.scatter(m.offsets, m.indices, m.values, xt, width, width, got, width)
			generic.scatter(m.offsets, m.indices, m.values, xt, width, width, want, width)
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-4 {
					t.Fatalf("%v width %d: scatter kernel [%d] = %v, generic %v", l, width, i, got[i], want[i])
				}
			}
		}
	}
}

// agreeVariants runs the four row-kernel variants, run(i, y, ld) for
// [far][stream] = [i/2][i%2], on copies of y0 (rows × width): the
// streaming ones (odd i) into a 64-byte aligned y whose stride is rounded
// up to 16 floats, as streamStores requires. It checks that all give
// variant 0's bits and leave the padding alone, and returns variant 0's y.
func agreeVariants(t *testing.T, name string, y0 []float32, rows, width int, run func(i int, y []float32, ld int)) []float32 {
	t.Helper()
	const pad = 1234
	var first []float32
	for i := range 4 {
		ld := width
		if i%2 == 1 {
			ld = (width + 15) / 16 * 16
		}
		y := alignedFloats(rows * ld)
		for r := range rows {
			copy(y[r*ld:], y0[r*width:(r+1)*width])
			for c := width; c < ld; c++ {
				y[r*ld+c] = pad
			}
		}
		run(i, y, ld)
		got := make([]float32, rows*width)
		for r := range rows {
			copy(got[r*width:], y[r*ld:r*ld+width])
			for c := width; c < ld; c++ {
				if y[r*ld+c] != pad {
					t.Fatalf("%s: variant %d wrote the padding y[%d,%d]", name, i, r, c)
				}
			}
		}
		if i == 0 {
			first = got
			continue
		}
		for j := range got {
			if got[j] != first[j] {
				t.Fatalf("%s: variant [far %d][stream %d] [%d] = %v, plain kernel %v", name, i/2, i%2, j, got[j], first[j])
			}
		}
	}
	return first
}

// alignedFloats returns n zeroed floats starting on a 64-byte boundary.
func alignedFloats(n int) []float32 {
	b := make([]float32, n+16)
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % 64 / 4)
	return b[(16-off)%16:][:n]
}

func TestRowKernelsBySize(t *testing.T) {
	k := kernelsFor(cpuid.Detected)
	k.farPays = true
	same := func(a, b rowKernel) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	for _, tc := range []struct {
		xRows, width, elem int
		far                bool
	}{
		{farGatherBytes / 512, 128, 4, false},
		{farGatherBytes/512 + 1, 128, 4, true},
		{farGatherBytes / 256, 128, 2, false},
		{farGatherBytes/256 + 1, 128, 2, true},
		{1 << 30, 0, 4, false},
	} {
		for s, stream := range []bool{false, true} {
			f := 0
			if tc.far {
				f = 1
			}
			if rows, _ := k.rowKernels(tc.xRows, tc.width, tc.elem, stream); !same(rows, k.rows[f][s]) {
				t.Errorf("rowKernels(%d, %d, %d, %v): far = %v, want %v", tc.xRows, tc.width, tc.elem, stream, !tc.far, tc.far)
			}
			k.farPays = false
			if rows, _ := k.rowKernels(tc.xRows, tc.width, tc.elem, stream); !same(rows, k.rows[0][s]) {
				t.Errorf("rowKernels(%d, %d, %d, %v) took the far kernel where it does not pay", tc.xRows, tc.width, tc.elem, stream)
			}
			k.farPays = true
		}
	}
}

// TestStreamStores checks when the output is written with non-temporal
// stores: only when it is overwritten, past streamOutputBytes, and its
// rows are 64-byte aligned.
func TestStreamStores(t *testing.T) {
	y := alignedFloats(64)
	big := int(streamOutputBytes/(4*16)) + 1
	for _, tc := range []struct {
		y          []float32
		rows, ldy  int
		accumulate bool
		want       bool
	}{
		{y, big, 16, false, true},
		{y, big, 16, true, false},
		{y, big - 1, 16, false, false},
		{y[1:], big, 16, false, false},
		{y, big, 17, false, false},
		{y, big, 32, false, true},
	} {
		if got := streamStores(tc.y, tc.rows, tc.ldy, tc.accumulate); got != tc.want {
			t.Errorf("streamStores(rows %d, ldy %d, accumulate %v, aligned %v) = %v, want %v",
				tc.rows, tc.ldy, tc.accumulate, len(tc.y) == 64, got, tc.want)
		}
	}
}

// TestMulCSRStream multiplies into outputs past a lowered
// streamOutputBytes, aligned and not, so that MulCSR takes the streaming
// kernels where it may and never where it may not.
func TestMulCSRStream(t *testing.T) {
	saved := streamOutputBytes
	defer func() { streamOutputBytes = saved }()
	streamOutputBytes = 1024
	rng := rand.New(rand.NewPCG(9, 10))
	m := randomCSR(rng, 300, 200, 20, 7, 150, true)
	for _, l := range levels() {
		useLevel(t, l)
		for _, width := range []int{16, 37, 128, 200} {
			x := randomDense(rng, m.cols, width)
			for _, ld := range []int{width, (width + 15) / 16 * 16} {
				for shift := range 2 {
					y := alignedFloats(m.rows*ld + 1)[shift:]
					want, scale := reference(m, x, width, width, y, ld, false)
					MulCSR(m.rows, m.offsets, m.indices, m.values, x, width, width, y, ld, false)
					check(t, fmt.Sprintf("%v width %d ld %d shift %d", l, width, ld, shift), y, want, scale, m.rows, width, ld, 0)
				}
			}
		}
	}
}

// TestMulCSRFarGather multiplies with an x just past farGatherBytes, which
// takes the far kernels (the bf16 ones are checked against the near ones in
// TestBF16KernelsAgree).
func TestMulCSRFarGather(t *testing.T) {
	const width = 128
	rng := rand.New(rand.NewPCG(7, 8))
	cols := farGatherBytes/(4*width) + 1
	m := randomCSR(rng, 50, cols, 30, 10, 300, true)
	x := randomDense(rng, cols, width)
	for _, l := range levels() {
		useLevel(t, l)
		y := randomDense(rng, m.rows, width)
		want, scale := reference(m, x, width, width, y, width, true)
		MulCSR(m.rows, m.offsets, m.indices, m.values, x, width, width, y, width, true)
		check(t, l.String(), y, want, scale, m.rows, width, width, 0)
	}
}

func TestBadInputPanics(t *testing.T) {
	offsets := []int64{0, 2, 1}
	indices := []int32{0, 5}
	x := make([]float32, 4*2)
	y := make([]float32, 2*2)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"index out of range", func() { MulCSR(1, offsets, indices, nil, x, 2, 2, y, 2, false) }},
		{"decreasing offsets", func() { MulCSR(2, offsets, []int32{0, 1}, nil, x, 2, 2, y, 2, false) }},
		{"short y", func() { MulCSR(1, offsets, []int32{0, 1}, nil, x, 2, 2, y[:1], 2, false) }},
		{"trans index out of range", func() { MulCSRTrans(1, 2, offsets, indices, nil, x, 2, 2, y, 2, false) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

func TestBalancedBounds(t *testing.T) {
	// One heavy row among light ones gets a chunk of its own.
	offsets := []int64{0, 1, 2, 1002, 1003, 1004, 1005}
	got := balancedBounds(nil, offsets, 4)
	if got[0] != 0 || got[len(got)-1] != 6 {
		t.Fatalf("bounds %v do not span the rows", got)
	}
	for c := 1; c < len(got); c++ {
		if got[c] <= got[c-1] {
			t.Fatalf("bounds %v not increasing", got)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	m := randomCSR(rng, 20000, 20000, 10, 3, 100, true)
	const width = 64
	x := randomDense(rng, m.cols, width)
	y := make([]float32, m.rows*width)
	for name, f := range map[string]func(){
		"MulCSR":             func() { MulCSR(m.rows, m.offsets, m.indices, m.values, x, width, width, y, width, false) },
		"MulCSRTrans":        func() { MulCSRTrans(m.rows, m.cols, m.offsets, m.indices, m.values, x, width, width, y, width, false) },
		"MulCSRTrans/narrow": func() { MulCSRTrans(m.rows, m.cols, m.offsets, m.indices, m.values, x, 8, 8, y, 8, false) },
	} {
		f() // warm the pools
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, a)
		}
	}
}

// TestMulCSRRowRange multiplies a band of rows given by a slice of offsets
// that does not start at zero, as callers do for minibatches.
func TestMulCSRRowRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	m := randomCSR(rng, 100, 50, 8, 40, 300, true)
	const width, lo, hi = 37, 30, 80
	x := randomDense(rng, m.cols, width)
	for _, l := range levels() {
		useLevel(t, l)
		full := make([]float32, m.rows*width)
		MulCSR(m.rows, m.offsets, m.indices, m.values, x, width, width, full, width, false)
		band := make([]float32, (hi-lo)*width)
		MulCSR(hi-lo, m.offsets[lo:], m.indices, m.values, x, width, width, band, width, false)
		for k := range band {
			if band[k] != full[lo*width+k] {
				t.Fatalf("%v: band[%d] = %v, full product has %v", l, k, band[k], full[lo*width+k])
			}
		}
	}
}
