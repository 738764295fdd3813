package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// topKReferenceColumns is the top-k selection spelt out: sort a row's
// entries by magnitude (NaN below every magnitude), ties by column, and
// return the first k columns in column order.
func topKReferenceColumns(row []float32, k int) []int {
	type entry struct {
		mag float64
		col int
	}
	es := make([]entry, len(row))
	for j, v := range row {
		m := math.Abs(float64(v))
		if math.IsNaN(m) {
			m = -1
		}
		es[j] = entry{m, j}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.mag != b.mag {
			if a.mag > b.mag {
				return -1
			}
			return 1
		}
		return a.col - b.col
	})
	cols := make([]int, k)
	for i, e := range es[:k] {
		cols[i] = e.col
	}
	slices.Sort(cols)
	return cols
}

// topKReference is the top-k encoding spelt out: each row's columns from
// topKReferenceColumns, sent with indices or after a bitmap as topKLayout
// says, or every value at ratio 1.
func topKReference(x []float32, rows, width int, ratio float64) []byte {
	k, format := topKLayout(width, ratio)
	bitmap := format == bitmapped
	var out []byte
	for i := range rows {
		if format == dense {
			for _, v := range x[i*width : (i+1)*width] {
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
			}
			continue
		}
		row := x[i*width : (i+1)*width]
		cols := topKReferenceColumns(row, k)
		if bitmap {
			m := make([]byte, (width+7)/8)
			for _, j := range cols {
				m[j/8] |= 1 << (j % 8)
			}
			out = append(out, m...)
		}
		for _, j := range cols {
			switch {
			case bitmap:
			case indexBytes(width) == 2:
				out = binary.LittleEndian.AppendUint16(out, uint16(j))
			default:
				out = binary.LittleEndian.AppendUint32(out, uint32(j))
			}
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(row[j]))
		}
	}
	return out
}

// topKReferenceDecoded is what decoding topKReference gives: the kept
// entries, zeros elsewhere.
func topKReferenceDecoded(x []float32, rows, width int, ratio float64) []float32 {
	k, _ := topKLayout(width, ratio)
	dec := make([]float32, rows*width)
	for i := range rows {
		for _, j := range topKReferenceColumns(x[i*width:(i+1)*width], k) {
			dec[i*width+j] = x[i*width+j]
		}
	}
	return dec
}

// topKRow fills a row with a mix that stresses the threshold: repeated
// magnitudes of both signs, zeros of both signs, NaNs with different
// payloads, infinities, subnormals, and rows that are mostly one value.
func topKRow(r *rand.Rand, row []float32) {
	kind := r.IntN(8)
	pool := make([]float32, 1+r.IntN(6))
	for i := range pool {
		pool[i] = float32(r.NormFloat64())
	}
	for j := range row {
		var v float32
		switch kind {
		case 0: // continuous
			v = float32(r.NormFloat64())
		case 1: // few distinct magnitudes
			v = pool[r.IntN(len(pool))]
		case 2: // ReLU-like: half zeros
			if r.IntN(2) == 0 {
				v = float32(math.Abs(r.NormFloat64()))
			}
		case 3: // everything at once
			switch r.IntN(12) {
			case 0:
				v = float32(math.NaN())
			case 1:
				v = math.Float32frombits(0xffc00001 + uint32(r.IntN(1000))) // negative NaN
			case 2:
				v = float32(math.Inf(1))
			case 3:
				v = float32(math.Inf(-1))
			case 4:
				v = 0
			case 5:
				v = float32(math.Copysign(0, -1))
			case 6:
				v = math.Float32frombits(uint32(r.IntN(1 << 23))) // subnormal
			case 7:
				v = -pool[r.IntN(len(pool))]
			case 8:
				v = math.MaxFloat32
			default:
				v = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30)))
			}
		case 4: // one value with rare exceptions
			v = pool[0]
			if r.IntN(10) == 0 {
				v = float32(r.NormFloat64())
			}
		case 5: // mostly NaN
			v = float32(math.NaN())
			if r.IntN(4) == 0 {
				v = float32(r.NormFloat64())
			}
		case 6: // small integers: many exact ties
			v = float32(r.IntN(7) - 3)
		default: // raw bit patterns
			v = math.Float32frombits(r.Uint32())
		}
		row[j] = v
	}
}

// Encode must send exactly what the implementation before it (topKOld) sent
// and what the reference spells out, for rows of every kind, widths 1 to
// 300 and ratios from 0.5 (taken as 1) to 1000.
func TestTopKMatchesReference(t *testing.T) {
	topKPaths(t, testTopKMatchesReference)
}

// topKPaths runs a test on each selection path this build and CPU have:
// the pure-Go prefix counts and, with AVX-512, the kernel.
func topKPaths(t *testing.T, test func(t *testing.T)) {
	asm := bitmapAsm
	defer func() { bitmapAsm = asm }()
	for _, bitmapAsm = range []bool{false, true} {
		if bitmapAsm && !asm {
			continue
		}
		t.Run(map[bool]string{false: "go", true: "avx512"}[bitmapAsm], test)
	}
}

func testTopKMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	ratios := []float64{0.5, 1, 1.01, 1.2, 1.5, 2, 2.5, 3, 4, 5, 7, 8, 10, 16, 20, 31, 32, 33, 64, 100, 128, 1000}
	c := &topK{}
	old := &topKOld{}
	out := make([]float32, 0)
	for width := 1; width <= 300; width++ {
		for trial := range 10 {
			rows := r.IntN(9)
			x := make([]float32, rows*width)
			for i := range rows {
				if i > 0 && r.IntN(3) == 0 { // a near copy of the previous row
					for j := range width {
						x[i*width+j] = x[(i-1)*width+j] * float32(1+0.01*r.NormFloat64())
					}
					continue
				}
				topKRow(r, x[i*width:(i+1)*width])
			}
			ratio := ratios[(width+trial*7)%len(ratios)]
			if trial >= 8 {
				ratio = 1 + 200*r.Float64()
			}
			k, format := topKLayout(width, ratio)
			want := topKReference(x, rows, width, ratio)
			if got := old.Encode(nil, x, rows, width, ratio, Key{}); format == indexed && !bytes.Equal(got, want) {
				t.Fatalf("old Encode differs from the reference: width %d ratio %v", width, ratio)
			}
			prefix := []byte{1, 2, 3}
			got := c.Encode(slices.Clone(prefix), x, rows, width, ratio, Key{})
			if !bytes.Equal(got[:3], prefix) || !bytes.Equal(got[3:], want) {
				for i := range rows {
					n := topKRowBytes(width, k, format)
					if !bytes.Equal(got[3+i*n:3+(i+1)*n], want[i*n:(i+1)*n]) {
						t.Fatalf("width %d ratio %v (k %d) row %d %v:\ngot  %v\nwant %v",
							width, ratio, k, i, x[i*width:(i+1)*width], got[3+i*n:3+(i+1)*n], want[i*n:(i+1)*n])
					}
				}
				t.Fatalf("width %d ratio %v: prefix clobbered", width, ratio)
			}
			// Decode scatters back exactly what was sent.
			out = slices.Grow(out[:0], rows*width)[:rows*width]
			for i := range out {
				out[i] = 7
			}
			if err := c.Decode(out, rows, width, ratio, Key{}, got[3:]); err != nil {
				t.Fatal(err)
			}
			dec := topKReferenceDecoded(x, rows, width, ratio)
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(dec[i]) {
					t.Fatalf("width %d ratio %v: decoded [%d] = %v, want %v", width, ratio, i, out[i], dec[i])
				}
			}
		}
	}
}

// One codec serves every layer and direction of an exchange: messages of
// different widths, in any order, must each match the reference.
func TestTopKMixedWidths(t *testing.T) { topKPaths(t, testTopKMixedWidths) }

func testTopKMixedWidths(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	c := &topK{}
	for _, m := range []struct {
		rows, width int
		ratio       float64
	}{{5, 100, 16}, {3, 128, 16}, {1, 100, 16}, {1, 128, 16}, {3, 100, 16},
		{4, 64, 12}, {1, 40, 12}, {2, 3, 2}, {3, 200, 1.5}, {1, 17, 40}, {2, 200, 40}, {1, 65, 3}} {
		x := randRows(r, m.rows, m.width)
		if m.width == 128 { // the largest entries in the last columns, which
			// the narrower messages after it do not have
			for i := range m.rows {
				for j := 112; j < 128; j++ {
					x[i*128+j] *= 100
				}
			}
		}
		want := topKReference(x, m.rows, m.width, m.ratio)
		if got := c.Encode(nil, x, m.rows, m.width, m.ratio, Key{}); !bytes.Equal(got, want) {
			t.Fatalf("%d rows of width %d, ratio %v, after other widths: Encode differs from the reference", m.rows, m.width, m.ratio)
		}
	}
}

// Rows that are all one value, or all NaN, or ±0, or have one outlier.
func TestTopKDegenerateRows(t *testing.T) { topKPaths(t, testTopKDegenerateRows) }

func testTopKDegenerateRows(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	c := &topK{}
	for _, width := range []int{1, 2, 7, 8, 9, 63, 64, 65, 200} {
		for _, fill := range []func(j int) float32{
			func(int) float32 { return 0 },
			func(j int) float32 { return []float32{0, negZero}[j%2] },
			func(int) float32 { return nan },
			func(int) float32 { return -inf },
			func(j int) float32 { return []float32{1, -1}[j%2] },
			func(j int) float32 { return float32(j % 3) },
			func(j int) float32 { return []float32{0, inf}[min(j%17, 1)] },
			func(j int) float32 { return []float32{nan, 1e-45}[min(j%5, 1)] },
			func(j int) float32 { return float32(width - j) },
			func(j int) float32 { return float32(j) * 1e-40 },
		} {
			const rows = 3
			x := make([]float32, rows*width)
			for i := range x {
				x[i] = fill(i % width)
			}
			for _, ratio := range []float64{1, 1.3, 2, 3, 4, 8, 32, 128} {
				want := topKReference(x, rows, width, ratio)
				if got := c.Encode(nil, x, rows, width, ratio, Key{}); !bytes.Equal(got, want) {
					t.Fatalf("width %d ratio %v row %v: Encode differs from the reference", width, ratio, x[:width])
				}
			}
		}
	}
}

// Rows of 65536 columns and more take the exact path, and rows wider
// than 65536 columns send 4-byte indices.
func TestTopKWideRows(t *testing.T) { topKPaths(t, testTopKWideRows) }

func testTopKWideRows(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	c := &topK{}
	for _, width := range []int{1<<16 - 1, 1 << 16, 1<<16 + 5} {
		x := make([]float32, 2*width)
		topKRow(r, x[:width])
		for j := range width {
			x[width+j] = float32(r.NormFloat64())
		}
		for _, ratio := range []float64{1, 3, 1000} {
			want := topKReference(x, 2, width, ratio)
			if got := c.Encode(nil, x, 2, width, ratio, Key{}); !bytes.Equal(got, want) {
				t.Fatalf("width %d ratio %v: Encode differs from the reference", width, ratio)
			}
		}
	}
}

func TestTopKDecodeRejectsBadColumns(t *testing.T) {
	c := &topK{}
	x := make([]float32, 64)
	x[5] = 1
	msg := c.Encode(nil, x, 1, 64, 32, Key{}) // one indexed entry
	binary.LittleEndian.PutUint16(msg, 64)
	if err := c.Decode(make([]float32, 64), 1, 64, 32, Key{}, msg); err == nil {
		t.Fatal("Decode accepted column 64 of a 64-wide row")
	}
	if err := c.Decode(make([]float32, 64), 1, 64, 32, Key{}, msg[1:]); err == nil {
		t.Fatal("Decode accepted a short message")
	}
	// 4 values at ratio 1.2 (13 bytes): a 1-byte bitmap of 3 columns and 3
	// values.
	msg = c.Encode(nil, []float32{1, 2, 3, 4}, 1, 4, 1.2, Key{})
	if k, format := topKLayout(4, 1.2); format != bitmapped || k != 3 || msg[0] != 0b1110 {
		t.Fatalf("layout (%d, %v), bitmap %#b; want 3 columns 1, 2, 3 in a bitmap", k, format, msg[0])
	}
	for _, bad := range []byte{0b10110, 0b0110, 0b1111} { // a column past the row; 2 columns; 4
		msg[0] = bad
		if err := c.Decode(make([]float32, 4), 1, 4, 1.2, Key{}, msg); err == nil {
			t.Errorf("Decode accepted bitmap %#b for 3 of 4 columns", bad)
		}
	}
}

// The codec runs in every halo exchange: after the first message it must
// not allocate.
func TestTopKEncodeDoesNotAllocate(t *testing.T) { topKPaths(t, testTopKEncodeDoesNotAllocate) }

func testTopKEncodeDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	const rows, width = 50, 256
	x := randRows(r, rows, width)
	c := &topK{}
	out := make([]float32, rows*width)
	for _, ratio := range []float64{1, 4, 32, 128} {
		buf := c.Encode(nil, x, rows, width, ratio, Key{})
		allocs := testing.AllocsPerRun(20, func() {
			buf = c.Encode(buf[:0], x, rows, width, ratio, Key{})
			if err := c.Decode(out, rows, width, ratio, Key{}, buf); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("ratio %v: %v allocations per Encode+Decode", ratio, allocs)
		}
	}
}

// BenchmarkTopK measures Encode and Decode separately against the
// implementation before commit (topKOld), in the same run, on 1 Mi
// normally distributed values (and, for "relu", half of them zero).
func BenchmarkTopK(b *testing.B) {
	for _, data := range []string{"normal", "relu"} {
		for _, width := range []int{64, 128, 256} {
			rows := 1 << 20 / width
			rng := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, rows*width)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
				if data == "relu" {
					x[i] = max(x[i], 0)
				}
			}
			out := make([]float32, rows*width)
			for _, ratio := range []float64{1, 4, 32, 128} {
				for _, impl := range []string{"old", "new"} {
					var c Compressor = &topK{}
					if impl == "old" {
						c = &topKOld{}
					}
					name := fmt.Sprintf("%s/w=%d/r=%g", data, width, ratio)
					msg := c.Encode(nil, x, rows, width, ratio, Key{})
					b.Run(name+"/encode/"+impl, func(b *testing.B) {
						buf := msg
						topKPerValue(b, rows*width, func() { buf = c.Encode(buf[:0], x, rows, width, ratio, Key{}) })
					})
					b.Run(name+"/decode/"+impl, func(b *testing.B) {
						topKPerValue(b, rows*width, func() {
							if err := c.Decode(out, rows, width, ratio, Key{}, msg); err != nil {
								b.Fatal(err)
							}
						})
					})
				}
			}
		}
	}
}

// topKPerValue runs f, which handles values values, as the benchmark's loop
// and reports wall and CPU time per value.
func topKPerValue(b *testing.B, values int, f func()) {
	b.SetBytes(int64(4 * values))
	cpu0 := sysstat.CPUTime()
	for b.Loop() {
		f()
	}
	n := float64(b.N) * float64(values)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/value")
	b.ReportMetric(float64((sysstat.CPUTime()-cpu0).Nanoseconds())/n, "cpu-ns/value")
}

// topKOld is the top-k codec as of commit 8f9ab69 (per-row quickselect, or
// insertion into the k best for small k), kept to check the current one
// against and to measure it against in the same benchmark run.
type topKOld struct {
	mags, best []float32 // scratch
}

func (t *topKOld) Name() string           { return "topk-8f9ab69" }
func (t *topKOld) Caps() Caps             { return Caps{RowByRow: true} }
func (t *topKOld) FixedRatio(int) float64 { return 0 }

func (t *topKOld) Encode(dst []byte, x []float32, rows, width int, ratio float64, _ Key) []byte {
	k := oldKept(width, ratio)
	ib := indexBytes(width)
	if cap(t.mags) < width {
		t.mags = make([]float32, width)
	}
	start := len(dst)
	dst = slices.Grow(dst, rows*k*(ib+4))[:start+rows*k*(ib+4)]
	out := dst[start:]
	p := 0
	for i := range rows {
		row := x[i*width : (i+1)*width]
		if k == 0 {
			continue
		}
		mags := t.mags[:width]
		for j, v := range row {
			mags[j] = oldMag(v)
		}
		var thr float32
		if k <= width/4 {
			thr = kthLargestSmall(mags, k, &t.best)
		} else {
			thr = kthLargest(mags, k)
		}
		above := 0
		for _, v := range row {
			if oldMag(v) > thr {
				above++
			}
		}
		ties := k - above
		for j, v := range row {
			a := oldMag(v)
			if a < thr || (a == thr && ties == 0) {
				continue
			}
			if a == thr {
				ties--
			}
			if ib == 2 {
				binary.LittleEndian.PutUint16(out[p:], uint16(j))
			} else {
				binary.LittleEndian.PutUint32(out[p:], uint32(j))
			}
			binary.LittleEndian.PutUint32(out[p+ib:], math.Float32bits(v))
			p += ib + 4
		}
	}
	return dst
}

// oldKept is the entries per row topKOld sends: as many as fit the ratio
// with their indices.
func oldKept(width int, ratio float64) int {
	return min(int(float64(4*width)/(max(ratio, 1)*float64(4+indexBytes(width)))), width)
}

// oldMag is |v|, or −1 for NaN.
func oldMag(v float32) float32 {
	if v != v {
		return -1
	}
	return math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
}

// kthLargestSmall returns the k-th largest value of a (1 ≤ k ≤ len(a))
// for small k: the k largest so far, kept sorted in *best (topKOld's
// selection for k ≤ width/4).
func kthLargestSmall(a []float32, k int, best *[]float32) float32 {
	if cap(*best) < k {
		*best = make([]float32, k)
	}
	b := (*best)[:k]
	for i, v := range a[:k] {
		j := i
		for ; j > 0 && b[j-1] < v; j-- {
			b[j] = b[j-1]
		}
		b[j] = v
	}
	last := b[k-1]
	for _, v := range a[k:] {
		if v <= last {
			continue
		}
		j := k - 1
		for ; j > 0 && b[j-1] < v; j-- {
			b[j] = b[j-1]
		}
		b[j] = v
		last = b[k-1]
	}
	return last
}

// kthLargest returns the k-th largest value of a (1 ≤ k ≤ len(a)),
// reordering a (quickselect; topKOld's selection for larger k).
func kthLargest(a []float32, k int) float32 {
	lo, hi, want := 0, len(a)-1, k-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] > a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] > a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] > a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] > pivot {
				i++
			}
			for a[j] < pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return a[want]
		}
	}
	return a[want]
}

func (t *topKOld) Decode(out []float32, rows, width int, ratio float64, _ Key, src []byte) error {
	k := oldKept(width, ratio)
	ib := indexBytes(width)
	if want := rows * k * (ib + 4); len(src) != want {
		return sizeError("topk", len(src), want)
	}
	clear(out[:rows*width])
	p := 0
	for i := range rows {
		row := out[i*width : (i+1)*width]
		for range k {
			var j int
			if ib == 2 {
				j = int(binary.LittleEndian.Uint16(src[p:]))
			} else {
				j = int(binary.LittleEndian.Uint32(src[p:]))
			}
			p += ib
			if j >= width {
				return fmt.Errorf("compress: topk message names column %d of a %d-wide row", j, width)
			}
			row[j] = math.Float32frombits(binary.LittleEndian.Uint32(src[p:]))
			p += 4
		}
	}
	return nil
}

// A GradCoder's backward message is "the gradient of a forward message's
// rows ... at the columns that message kept": decoding it gives the
// gradient at exactly the columns the forward decode filled, zero
// elsewhere, in 4 bytes an entry.
func TestTopKGradientFollowsTheForwardColumns(t *testing.T) {
	topKPaths(t, testTopKGradientFollowsTheForwardColumns)
}

func testTopKGradientFollowsTheForwardColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := &topK{}
	normal := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			for x[i] == 0 {
				x[i] = float32(r.NormFloat64())
			}
		}
		return x
	}
	// Past 65,536 columns indices take 4 bytes.
	for _, width := range []int{1, 7, 16, 64, 100, 128, 300, 1<<16 + 5} {
		for _, ratio := range []float64{1, 1.5, 3, 8, 12, 40, 1000} {
			rows := 1 + r.IntN(5)
			x, g := normal(rows*width), normal(rows*width)
			fwd := c.Encode(nil, x, rows, width, ratio, Key{})
			sent := make([]float32, rows*width)
			if err := c.Decode(sent, rows, width, ratio, Key{}, fwd); err != nil {
				t.Fatal(err)
			}
			cols, err := c.Columns(nil, fwd, rows, width, ratio)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Columns(nil, append(fwd, 0), rows, width, ratio); err == nil {
				t.Fatalf("width %d ratio %v: Columns accepted a message one byte too long", width, ratio)
			}
			if 2*len(cols) > len(fwd) {
				t.Fatalf("width %d ratio %v: %d bytes of columns for a %d-byte message", width, ratio, len(cols), len(fwd))
			}
			msg := c.EncodeGrad(nil, g, rows, width, ratio, cols)
			if k, _ := topKLayout(width, ratio); len(msg) != 4*rows*k {
				t.Fatalf("width %d ratio %v: %d bytes for %d rows of %d entries", width, ratio, len(msg), rows, k)
			}
			out := make([]float32, rows*width)
			for i := range out {
				out[i] = float32(math.NaN()) // DecodeGrad must write every entry
			}
			if err := c.DecodeGrad(out, rows, width, ratio, cols, msg); err != nil {
				t.Fatal(err)
			}
			for i := range out {
				want := float32(0)
				if sent[i] != 0 {
					want = g[i]
				}
				if out[i] != want {
					t.Fatalf("width %d ratio %v entry %d: %v, want %v", width, ratio, i, out[i], want)
				}
			}
			if err := c.DecodeGrad(out, rows, width, ratio, cols, append(msg, 0)); err == nil {
				t.Fatalf("width %d ratio %v: DecodeGrad accepted a message one byte too long", width, ratio)
			}
		}
	}
}
