package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randMatrix(r *rand.Rand, rows, cols int) *Matrix {
	m := New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64())
	}
	return m
}

func randCSR(r *rand.Rand, rows, cols int, density float64, weighted bool) *CSR {
	a := &CSR{Rows: rows, Cols: cols, Offsets: make([]int64, rows+1)}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			if r.Float64() < density {
				a.Indices = append(a.Indices, int32(j))
				if weighted {
					a.Values = append(a.Values, float32(r.NormFloat64()))
				}
			}
		}
		a.Offsets[i+1] = int64(len(a.Indices))
	}
	return a
}

// naive computes op(a)·op(b) in float64.
func naive(a *Matrix, ta bool, b *Matrix, tb bool) [][]float64 {
	at := func(m *Matrix, t bool, i, j int) float64 {
		if t {
			return float64(m.At(j, i))
		}
		return float64(m.At(i, j))
	}
	m, k := a.Rows, a.Cols
	if ta {
		m, k = k, m
	}
	n := b.Cols
	if tb {
		n = b.Rows
	}
	out := make([][]float64, m)
	for i := range out {
		out[i] = make([]float64, n)
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				out[i][j] += at(a, ta, i, p) * at(b, tb, p, j)
			}
		}
	}
	return out
}

func close32(got float32, want, scale float64) bool {
	return math.Abs(float64(got)-want) <= 1e-4*(1+scale)
}

func TestMatMulForms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{1, 1, 1}, {5, 7, 3}, {33, 17, 65}, {130, 40, 9}} {
		m, k, n := sh[0], sh[1], sh[2]
		cases := []struct {
			name   string
			ta, tb bool
			fn     func(c, a, b *Matrix)
			acc    bool
		}{
			{"NN", false, false, MatMul, false}, {"NN+", false, false, MatMulAdd, true},
			{"TN", true, false, MatMulTN, false}, {"TN+", true, false, MatMulTNAdd, true},
			{"NT", false, true, MatMulNT, false}, {"NT+", false, true, MatMulNTAdd, true},
		}
		for _, tc := range cases {
			a := randMatrix(r, m, k)
			if tc.ta {
				a = randMatrix(r, k, m)
			}
			b := randMatrix(r, k, n)
			if tc.tb {
				b = randMatrix(r, n, k)
			}
			c := randMatrix(r, m, n)
			c0 := c.Clone()
			tc.fn(c, a, b)
			want := naive(a, tc.ta, b, tc.tb)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					w := want[i][j]
					if tc.acc {
						w += float64(c0.At(i, j))
					}
					if !close32(c.At(i, j), w, math.Sqrt(float64(k))) {
						t.Fatalf("%s %v: c[%d,%d] = %v, want %v", tc.name, sh, i, j, c.At(i, j), w)
					}
				}
			}
		}
	}
}

// SpMMRows gives a piece of SpMM's rows, the same bits, whatever the
// piece (empty, one row, the whole).
func TestSpMMRowsIsAPieceOfSpMM(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := randCSR(r, 41, 29, 0.15, true)
	x := randMatrix(r, 29, 21)
	whole := New(41, 21)
	SpMM(whole, a, x)
	for _, span := range [][2]int{{0, 41}, {0, 0}, {7, 8}, {13, 41}, {40, 41}, {3, 30}} {
		lo, hi := span[0], span[1]
		got := randMatrix(r, hi-lo, 21)
		SpMMRows(got, a, lo, hi, x)
		for i := range got.Data {
			if math.Float32bits(got.Data[i]) != math.Float32bits(whole.Data[lo*21+i]) {
				t.Fatalf("rows [%d, %d): entry %d is %v, SpMM's %v", lo, hi, i, got.Data[i], whole.Data[lo*21+i])
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for rows past the end")
		}
	}()
	SpMMRows(New(2, 21), a, 40, 42, x)
}

// SpMMMasked gives SpMM's bits on the gathered rows dropped: a batch of
// rows of a larger x, its operator renumbered to x's rows, each batch row
// dropped by its bits; and SpMMMaskedBF16 on x in bfloat16 gives SpMM's
// bits on the gathered rows widened and dropped.
func TestSpMMMaskedIsSpMMOnTheDroppedRows(t *testing.T) {
	for _, half := range []bool{false, true} {
		spmmMaskedIsSpMMOnTheDroppedRows(t, half)
	}
}

func spmmMaskedIsSpMMOnTheDroppedRows(t *testing.T, half bool) {
	r := rand.New(rand.NewPCG(7, 8))
	const batch, cols = 29, 70
	a := randCSR(r, 41, batch, 0.15, true)
	x := randMatrix(r, 100, cols)
	var xb *MatrixBF16
	if half {
		xb = MatrixToBF16(x)
		x = xb.Widen()
	}
	ids := make([]int32, batch)
	for k := range ids {
		ids[k] = int32(r.IntN(x.Rows))
	}
	const words, scale = 2, 1.5
	bits := make([]uint64, batch*words)
	dropped := New(batch, cols)
	for k, v := range ids {
		bits[k*words], bits[k*words+1] = r.Uint64(), r.Uint64()&(1<<(cols-64)-1)
		for c := range cols {
			if bits[k*words+c/64]>>(c%64)&1 == 1 {
				dropped.Set(k, c, x.At(int(v), c)*scale)
			}
		}
	}
	want := New(41, cols)
	SpMM(want, a, dropped)
	at := *a
	at.Cols, at.Indices = x.Rows, make([]int32, len(a.Indices))
	for p, j := range a.Indices {
		at.Indices[p] = ids[j]
	}
	got := randMatrix(r, 41, cols)
	m := RowMask{Bits: bits, Stride: words, Rows: a.Indices, Scale: scale}
	if half {
		SpMMMaskedBF16(got, &at, xb, m)
	} else {
		SpMMMasked(got, &at, x, m)
	}
	for i := range want.Data {
		if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
			t.Fatalf("bf16 %v: entry %d is %v, SpMM's on the dropped rows %v", half, i, got.Data[i], want.Data[i])
		}
	}
}

func TestMatMulShapeMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for mismatched shapes")
		}
	}()
	MatMul(New(2, 2), New(2, 3), New(2, 2))
}

func TestSpMMAgainstDense(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, weighted := range []bool{false, true} {
		a := randCSR(r, 37, 23, 0.2, weighted)
		if err := a.Validate(); err != nil {
			t.Fatal(err)
		}
		x := randMatrix(r, 23, 19)
		ad := a.Dense()
		want := naive(ad, false, x, false)
		got := randMatrix(r, 37, 19)
		SpMM(got, a, x)
		acc := got.Clone()
		SpMMAdd(acc, a, x)
		for i := range want {
			for j := range want[i] {
				if !close32(got.At(i, j), want[i][j], 1) || !close32(acc.At(i, j), 2*want[i][j], 1) {
					t.Fatalf("SpMM[%d,%d] = %v (acc %v), want %v", i, j, got.At(i, j), acc.At(i, j), want[i][j])
				}
			}
		}
		y := randMatrix(r, 37, 5)
		wantT := naive(ad, true, y, false)
		gotT := New(23, 5)
		SpMMT(gotT, a, y)
		viaTranspose := New(23, 5)
		SpMM(viaTranspose, a.Transpose(), y)
		for i := range wantT {
			for j := range wantT[i] {
				if !close32(gotT.At(i, j), wantT[i][j], 1) || !close32(viaTranspose.At(i, j), wantT[i][j], 1) {
					t.Fatalf("SpMMT[%d,%d] = %v / %v, want %v", i, j, gotT.At(i, j), viaTranspose.At(i, j), wantT[i][j])
				}
			}
		}
	}
}

func TestCSRValidate(t *testing.T) {
	good := &CSR{Rows: 2, Cols: 3, Offsets: []int64{0, 1, 3}, Indices: []int32{2, 0, 1}}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid CSR rejected: %v", err)
	}
	bad := []*CSR{
		{Rows: 2, Cols: 3, Offsets: []int64{0, 1}, Indices: []int32{0}},
		{Rows: 1, Cols: 3, Offsets: []int64{1, 1}, Indices: []int32{0}},
		{Rows: 2, Cols: 3, Offsets: []int64{0, 2, 1}, Indices: []int32{0, 1}},
		{Rows: 1, Cols: 3, Offsets: []int64{0, 1}, Indices: []int32{3}},
		{Rows: 1, Cols: 3, Offsets: []int64{0, 1}, Indices: []int32{-1}},
		{Rows: 1, Cols: 3, Offsets: []int64{0, 2}, Indices: []int32{0}},
		{Rows: 1, Cols: 3, Offsets: []int64{0, 1}, Indices: []int32{0}, Values: []float32{1, 2}},
	}
	for i, a := range bad {
		if a.Validate() == nil {
			t.Errorf("case %d: invalid CSR accepted", i)
		}
	}
}

func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 17, parallelMinLen + 3} {
		a, b := randMatrix(r, 1, n), randMatrix(r, 1, n)
		dst := New(1, n)
		check := func(name string, got *Matrix, f func(i int) float32) {
			t.Helper()
			for i := range got.Data {
				if w := f(i); math.Abs(float64(got.Data[i]-w)) > 1e-6*(1+math.Abs(float64(w))) {
					t.Fatalf("%s n=%d [%d] = %v, want %v", name, n, i, got.Data[i], w)
				}
			}
		}
		Add(dst, a, b)
		check("Add", dst, func(i int) float32 { return a.Data[i] + b.Data[i] })
		Sub(dst, a, b)
		check("Sub", dst, func(i int) float32 { return a.Data[i] - b.Data[i] })
		Mul(dst, a, b)
		check("Mul", dst, func(i int) float32 { return a.Data[i] * b.Data[i] })
		c := a.Clone()
		AddScaled(c, 0.5, b)
		check("AddScaled", c, func(i int) float32 { return a.Data[i] + 0.5*b.Data[i] })
		Scale(c, 2)
		check("Scale", c, func(i int) float32 { return 2 * (a.Data[i] + 0.5*b.Data[i]) })
		ReLU(dst, a)
		check("ReLU", dst, func(i int) float32 { return max(a.Data[i], 0) })
		y := dst.Clone()
		ReLUBackward(dst, b, y)
		check("ReLUBackward", dst, func(i int) float32 {
			if a.Data[i] > 0 {
				return b.Data[i]
			}
			return 0
		})
		LeakyReLU(dst, a, 0.2)
		check("LeakyReLU", dst, func(i int) float32 {
			if a.Data[i] < 0 {
				return 0.2 * a.Data[i]
			}
			return a.Data[i]
		})
		ELU(dst, a, 1)
		check("ELU", dst, func(i int) float32 {
			if a.Data[i] <= 0 {
				return float32(math.Expm1(float64(a.Data[i])))
			}
			return a.Data[i]
		})
	}
}

func TestSoftmaxRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := randMatrix(r, 9, 6)
	x.Set(0, 0, 1000) // must not overflow
	s, ls := New(9, 6), New(9, 6)
	Softmax(s, x)
	LogSoftmax(ls, x)
	for i := 0; i < x.Rows; i++ {
		var sum float64
		for j := 0; j < x.Cols; j++ {
			sum += float64(s.At(i, j))
			if d := math.Abs(math.Log(float64(s.At(i, j))) - float64(ls.At(i, j))); s.At(i, j) > 1e-30 && d > 1e-5 {
				t.Fatalf("row %d col %d: log(softmax) %v vs logsoftmax %v", i, j, math.Log(float64(s.At(i, j))), ls.At(i, j))
			}
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("row %d sums to %v", i, sum)
		}
	}
}

// LogSoftmaxRows writes the listed rows as LogSoftmax does, bit for bit,
// and no other row.
func TestLogSoftmaxRowsWritesOnlyItsRows(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x := randMatrix(r, 5000, 7)
	all := New(x.Rows, x.Cols)
	LogSoftmax(all, x)
	many := make([]int32, 0, 4000) // enough rows to run in parallel
	for _, i := range r.Perm(x.Rows)[:4000] {
		many = append(many, int32(i))
	}
	for _, rows := range [][]int32{nil, {3}, {4999, 0, 17}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, many} {
		got := New(x.Rows, x.Cols)
		for i := range got.Data {
			got.Data[i] = 42
		}
		LogSoftmaxRows(got, x, rows)
		listed := map[int]bool{}
		for _, row := range rows {
			listed[int(row)] = true
		}
		for i := range x.Rows {
			for j := range x.Cols {
				want := float32(42)
				if listed[i] {
					want = all.At(i, j)
				}
				if g := got.At(i, j); math.Float32bits(g) != math.Float32bits(want) {
					t.Fatalf("rows %v: (%d, %d) = %v, want %v", rows, i, j, g, want)
				}
			}
		}
	}
}

func TestLogSoftmaxRowsRejectsRowsOutOfRange(t *testing.T) {
	x := New(3, 2)
	defer func() {
		if recover() == nil {
			t.Fatal("row 3 of 3 accepted")
		}
	}()
	LogSoftmaxRows(New(3, 2), x, []int32{0, 3})
}

func TestReductions(t *testing.T) {
	m := FromSlice(2, 3, []float32{1, 2, 3, 4, 5, 6})
	sums := make([]float32, 3)
	SumRows(sums, m)
	if sums[0] != 5 || sums[1] != 7 || sums[2] != 9 {
		t.Fatalf("SumRows = %v", sums)
	}
	if Sum(m) != 21 || Dot(m, m) != 91 {
		t.Fatalf("Sum %v Dot %v", Sum(m), Dot(m, m))
	}
	arg := make([]int32, 2)
	ArgmaxRows(arg, FromSlice(2, 3, []float32{0, 5, 1, 7, 2, 7}))
	if arg[0] != 1 || arg[1] != 0 {
		t.Fatalf("ArgmaxRows = %v (ties go to the first)", arg)
	}
	AddRowVector(m, []float32{1, 0, -1})
	if m.At(1, 0) != 5 || m.At(1, 2) != 5 {
		t.Fatalf("AddRowVector: %v", m.Data)
	}
}

func TestF16RoundTripsEveryHalf(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	f := make([]float32, len(src))
	FromF16(f, src)
	back := make([]uint16, len(src))
	ToF16(back, f)
	for i, h := range src {
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN {
			if !math.IsNaN(float64(f[i])) || back[i]&0x7c00 != 0x7c00 || back[i]&0x3ff == 0 {
				t.Fatalf("NaN %#04x did not stay NaN", h)
			}
			continue
		}
		if back[i] != h {
			t.Fatalf("half %#04x → %v → %#04x", h, f[i], back[i])
		}
	}
}

// TestF16RoundsToNearest checks random float32 values against the two
// neighbouring halves: the chosen one must be at least as close.
func TestF16RoundsToNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 200000; i++ {
		x := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-25)))
		var h [1]uint16
		ToF16(h[:], []float32{x})
		var got [1]float32
		FromF16(got[:], h[:])
		if math.IsInf(float64(got[0]), 0) {
			if math.Abs(float64(x)) < 65504 {
				t.Fatalf("%v overflowed", x)
			}
			continue
		}
		err := math.Abs(float64(got[0]) - float64(x))
		for _, nb := range []uint16{h[0] + 1, h[0] - 1} {
			if nb&0x7c00 == 0x7c00 {
				continue
			}
			var f [1]float32
			FromF16(f[:], []uint16{nb})
			if d := math.Abs(float64(f[0]) - float64(x)); d < err {
				t.Fatalf("%v → %v, but neighbour %v is closer", x, got[0], f[0])
			}
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {0, 0}, {float32(math.Inf(1)), 0x7f80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81}, // above half rounds up
	}
	for _, c := range cases {
		var h [1]uint16
		ToBF16(h[:], []float32{c.in})
		if h[0] != c.want {
			t.Errorf("bf16(%v) = %#04x, want %#04x", c.in, h[0], c.want)
		}
	}
	var h [1]uint16
	ToBF16(h[:], []float32{float32(math.NaN())})
	var f [1]float32
	FromBF16(f[:], h[:])
	if !math.IsNaN(float64(f[0])) {
		t.Fatal("NaN lost in bf16")
	}
}

// TransposeInto gives Transpose's matrix whatever t held before, and
// reuses its storage.
func TestTransposeInto(t *testing.T) {
	a := &CSR{Rows: 3, Cols: 4, Offsets: []int64{0, 2, 2, 5}, Indices: []int32{1, 3, 0, 1, 3}, Values: []float32{1, 2, 3, 4, 5}}
	want := a.Dense()
	var tr CSR
	for _, m := range []*CSR{{Rows: 1, Cols: 2, Offsets: []int64{0, 2}, Indices: []int32{0, 1}}, a, a} {
		m.TransposeInto(&tr)
	}
	got := tr.Dense()
	for i := range 3 {
		for j := range 4 {
			if got.At(j, i) != want.At(i, j) {
				t.Fatalf("transpose (%d, %d) = %v, want %v", j, i, got.At(j, i), want.At(i, j))
			}
		}
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	p := &tr.Indices[0]
	a.TransposeInto(&tr)
	if &tr.Indices[0] != p {
		t.Fatal("TransposeInto did not reuse the storage")
	}
}
