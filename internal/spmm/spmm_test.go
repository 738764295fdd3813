package spmm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

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

// TestKernelsAgree runs the row kernels directly against the pure-Go twin.
func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randomCSR(rng, 64, 80, 9, 5, 200, true)
	for _, l := range levels() {
		k := kernelsFor(l)
		for width := 1; width <= 300; width++ {
			x := randomDense(rng, m.cols, width)
			got := randomDense(rng, m.rows, width)
			want := append([]float32(nil), got...)
			far := append([]float32(nil), got...)
			k.rows(m.offsets, m.indices, m.values, x, width, width, got, width, true)
			k.rowsFar(m.offsets, m.indices, m.values, x, width, width, far, width, true)
			generic.rows(m.offsets, m.indices, m.values, x, width, width, want, width, true)
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-4 {
					t.Fatalf("%v width %d: rows kernel [%d] = %v, generic %v", l, width, i, got[i], want[i])
				}
				if far[i] != got[i] {
					t.Fatalf("%v width %d: far rows kernel [%d] = %v, rows kernel %v", l, width, i, far[i], got[i])
				}
			}
			xt := randomDense(rng, m.rows, width)
			got = randomDense(rng, m.cols, width)
			want = append(want[:0], got...)
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
		rows, _ := k.rowKernels(tc.xRows, tc.width, tc.elem)
		want := k.rows
		if tc.far {
			want = k.rowsFar
		}
		if !same(rows, want) {
			t.Errorf("rowKernels(%d, %d, %d): far = %v, want %v", tc.xRows, tc.width, tc.elem, !tc.far, tc.far)
		}
		k.farPays = false
		if rows, _ := k.rowKernels(tc.xRows, tc.width, tc.elem); !same(rows, k.rows) {
			t.Errorf("rowKernels(%d, %d, %d) took the far kernel where it does not pay", tc.xRows, tc.width, tc.elem)
		}
		k.farPays = true
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
