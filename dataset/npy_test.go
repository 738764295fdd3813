package dataset

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseNPYDTypes(t *testing.T) {
	tests := []struct {
		descr string
		shape []int
		data  []byte
		want  any // result of the natural accessor
	}{
		{"<f4", []int{3}, le([]float32{1, -2.5, 3}), []float32{1, -2.5, 3}},
		{"<f8", []int{2}, le([]float64{0.25, 1e10}), []float32{0.25, 1e10}},
		{"<V2", []int{3}, le([]uint16{0x3f80, 0xc020, 0x0000}), []float32{1, -2.5, 0}},
		{"<i4", []int{2, 2}, le([]int32{1, -2, 3, 4}), []int64{1, -2, 3, 4}},
		{"<i8", []int{2}, le([]int64{1 << 40, -1}), []int64{1 << 40, -1}},
		{"|i1", []int{3}, le([]int8{-1, 0, 127}), []int64{-1, 0, 127}},
		{"|u1", []int{2}, le([]uint8{0, 255}), []int64{0, 255}},
		{"|b1", []int{3}, le([]bool{true, false, true}), []bool{true, false, true}},
		{"<U4", []int{2}, unicode(4, "ab", "wxyz"), []string{"ab", "wxyz"}},
		{"<U2", []int{1}, unicode(2, "é"), []string{"é"}},
		{"<f4", []int{}, le([]float32{7}), []float32{7}},
		{"<f4", []int{0, 5}, nil, []float32{}},
	}
	for _, tc := range tests {
		t.Run(tc.descr, func(t *testing.T) {
			a, err := ParseNPY("x.npy", npyBytes(tc.descr, false, tc.shape, tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a.Shape, tc.shape) {
				t.Errorf("shape %v, want %v", a.Shape, tc.shape)
			}
			var got any
			switch tc.want.(type) {
			case []float32:
				got, err = a.Float32s()
			case []int64:
				got, err = a.Int64s()
			case []bool:
				got, err = a.Bools()
			case []string:
				got, err = a.Strings()
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseNPYErrors(t *testing.T) {
	good := npyBytes("<f4", false, []int{2}, le([]float32{1, 2}))
	tests := []struct {
		name, wantErr string
		file          []byte
	}{
		{"fortran", "fortran_order", npyBytes("<f4", true, []int{2, 2}, le([]float32{1, 2, 3, 4}))},
		{"big endian", "big-endian", npyBytes(">f4", false, []int{1}, le([]float32{1}))},
		{"complex64", "unsupported dtype \"<c8\"", npyBytes("<c8", false, []int{1}, make([]byte, 8))},
		{"object", "unsupported dtype \"|O\"", npyBytes("|O", false, []int{1}, []byte{0})},
		{"truncated data", "truncated", good[:len(good)-1]},
		{"truncated header", "reading", good[:20]},
		{"bad magic", "magic", append([]byte("XNUMPY"), good[6:]...)},
		{"a model file", "safetensors", append([]byte{9, 0, 0, 0, 0, 0, 0, 0}, `{"a":{}}  `...)},
		{"version 9", "version 9", append(append([]byte{}, good[:6]...), append([]byte{9, 0}, good[8:]...)...)},
		{"negative dim", "bad dimension", npyBytes("<f4", false, []int{-1}, nil)},
		{"structured", "descr", []byte("\x93NUMPY\x01\x00\x30\x00{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }")},
		{"huge shape", "too large", npyBytes("<f8", false, []int{1 << 30, 1 << 30}, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNPY("x.npy", tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "x.npy") {
				t.Fatalf("err = %v, want one naming x.npy and containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestAccessorErrors(t *testing.T) {
	tests := []struct {
		name, wantErr string
		arr           []byte
		call          func(*Array) error
	}{
		{"float as int", "want an integer", npyBytes("<f4", false, []int{1}, le([]float32{1.5})), func(a *Array) error { _, err := a.Int64s(); return err }},
		{"mask value 2", "want 0 or 1", npyBytes("|u1", false, []int{1}, []byte{2}), func(a *Array) error { _, err := a.Bools(); return err }},
		{"string as float", "not numeric", npyBytes("<U1", false, []int{1}, unicode(1, "a")), func(a *Array) error { _, err := a.Float32s(); return err }},
		{"int as string", "not a unicode", npyBytes("<i4", false, []int{1}, le([]int32{1})), func(a *Array) error { _, err := a.Strings(); return err }},
		{"int32 overflow", "int32", npyBytes("<i8", false, []int{1}, le([]int64{1 << 40})), func(a *Array) error { _, err := a.Int32s(); return err }},
		{"bad rune", "code point", npyBytes("<U1", false, []int{1}, le([]uint32{0xD800})), func(a *Array) error { _, err := a.Strings(); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseNPY("arr", tc.arr)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.call(a); err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "arr") {
				t.Fatalf("err = %v, want one naming arr and containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseNPZ(t *testing.T) {
	for _, deflate := range []bool{false, true} {
		z, err := ParseNPZ("t.npz", tinyBenchmarkNPZ(deflate))
		if err != nil {
			t.Fatalf("deflate=%v: %v", deflate, err)
		}
		if len(z.Arrays) != 10 {
			t.Errorf("deflate=%v: %d arrays, want 10", deflate, len(z.Arrays))
		}
		if _, err := z.Get("nope"); err == nil || !strings.Contains(err.Error(), "adj_data") {
			t.Errorf("missing array error %v does not list the members", err)
		}
	}
	whole := tinyBenchmarkNPZ(true)
	corrupt := tinyBenchmarkNPZ(false)
	at := bytes.Index(corrupt, le([]float32{1, 2, 0.5}))
	corrupt[at+5] ^= 0x40 // attr_data[1]: 2 becomes 8, sizes unchanged
	for _, tc := range []struct {
		name, wantErr string
		file          []byte
	}{
		{"truncated zip", "not a valid .npz", whole[:len(whole)/2]},
		{"not zip", "not a valid .npz", []byte("hello")},
		{"bad checksum", "array attr_data: corrupt member: zip: checksum error", corrupt},
		{"bad member", "array m", npzBytes(false, member{"m", []byte("junk")})},
		{"truncated member", "array m: truncated", npzBytes(true, member{"m", npyBytes("<f4", false, []int{100}, le([]float32{1}))})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNPZ("t.npz", tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "t.npz") {
				t.Fatalf("err = %v, want one naming t.npz and containing %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzNPY(f *testing.F) {
	f.Add(npyBytes("<f4", false, []int{2, 2}, le([]float32{1, 2, 3, 4})))
	f.Add(npyBytes("<U3", false, []int{2}, unicode(3, "ab", "c")))
	f.Add(npyBytes("|b1", false, []int{3}, le([]bool{true, false, true})))
	f.Add(npyBytes("<i8", false, []int{1}, le([]int64{-5})))
	f.Add(npyBytes("|i1", true, []int{2}, []byte{1, 2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseNPY("fuzz.npy", b)
		if err != nil {
			return
		}
		// Every accessor must either succeed with Len() values or fail cleanly.
		if v, err := a.Float32s(); err == nil && len(v) != a.Len() {
			t.Fatalf("Float32s gave %d values for %d elements", len(v), a.Len())
		}
		if v, err := a.Int64s(); err == nil && len(v) != a.Len() {
			t.Fatalf("Int64s gave %d values for %d elements", len(v), a.Len())
		}
		a.Int32s()
		a.Bools()
		a.Strings()
	})
}

func FuzzNPZ(f *testing.F) {
	f.Add(tinyBenchmarkNPZ(false))
	f.Add(tinyBenchmarkNPZ(true))
	f.Add(tolokersLikeNPZ())
	// Inputs that declare large sizes: a member inflating to 4 MiB of
	// zeros that the layout cannot use, a header claiming 2^31 floats, and
	// zip sizes that lie.
	f.Add(bombNPZ("labels", 4))
	f.Add(bombNPZ("attr_matrix", 4))
	f.Add(npzBytes(true, member{"adj_indptr", npyBytes("<i8", false, []int{1 << 31}, nil)}))
	f.Add(npzBytes(false, member{"edges", npyBytes("<i8", false, []int{1 << 30, 2}, nil)},
		member{"node_features", npyBytes("<f4", false, []int{1 << 30, 1 << 10}, nil)}))
	// A member no layout reads, and sparse matrices whose shapes no array
	// backs: 2^31-1 coo rows for one entry, 2^31-1 csr columns.
	f.Add(bombInto(npzBytes(true), "x", 4))
	f.Add(scipyNPZ("coo", 1<<31-1, 1<<31-1, []float64{1}, map[string][]int32{"row": {0}, "col": {1}}))
	f.Add(scipyNPZ("csr", 2, 1<<31-1, []float64{1}, map[string][]int32{"indptr": {0, 1, 1}, "indices": {0}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		// What the reader holds is bounded by what the archive can inflate
		// to, about 1032:1 (and a few conversions of it).
		limit := uint64(len(b))*8*maxDeflateRatio + 64<<20
		if n := allocated(func() { ParseNPZDataset("fuzz", "fuzz.npz", b) }); n > limit {
			t.Fatalf("a %d-byte archive allocated %d bytes", len(b), n)
		}
		z, err := ParseNPZ("fuzz.npz", b)
		if err != nil {
			return
		}
		if d, err := npzDataset("fuzz", z); err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("reader returned an invalid dataset: %v", err)
			}
		}
	})
}

// Every float16 value widens to the float32 of the same value: numpy's
// float16 (<f2) features, as the OGB-LSC graphs ship them, were refused.
func TestHalfToFloat32(t *testing.T) {
	for h := range 1 << 16 {
		got := halfToFloat32(uint16(h))
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		exp, frac := h>>10&0x1f, float64(h&0x3ff)
		var want float64
		switch {
		case exp == 0x1f && frac == 0:
			want = math.Inf(int(sign))
		case exp == 0x1f:
			if !math.IsNaN(float64(got)) {
				t.Errorf("%#04x: %v, want NaN", h, got)
			}
			continue
		case exp == 0:
			want = sign * frac * math.Pow(2, -24)
		default:
			want = sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign < 0) {
			t.Errorf("%#04x: %v, want %v", h, got, want)
		}
	}
}

// Narrow and unsigned integer dtypes read as their values.
func TestNPYNarrowIntegers(t *testing.T) {
	for _, tc := range []struct {
		descr string
		data  []byte
		want  []int64
	}{
		{"<i2", []byte{0xff, 0xff, 2, 0}, []int64{-1, 2}},
		{"<u2", []byte{0xff, 0xff, 2, 0}, []int64{65535, 2}},
		{"<u4", []byte{0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0}, []int64{1<<32 - 1, 2}},
		{"<u8", []byte{7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, []int64{7, 2}},
	} {
		a, err := ParseNPY("a.npy", npyBytes(tc.descr, false, []int{2}, tc.data))
		if err != nil {
			t.Fatalf("%s: %v", tc.descr, err)
		}
		got, err := a.Int64s()
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.descr, got, err, tc.want)
		}
	}
	a, _ := ParseNPY("a.npy", npyBytes("<u8", false, []int{1}, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}))
	if _, err := a.Int64s(); err == nil {
		t.Error("a uint64 of 2^63 read as an int64")
	}
}
