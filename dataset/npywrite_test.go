package dataset

import (
	"bytes"
	"slices"
	"testing"
)

func TestWriteNPYFloat32RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		data  []float32
	}{
		{[]int{2, 3}, []float32{1, 2, 3, 4, 5, -0.25}},
		{[]int{4}, []float32{0.5, 1e-8, 3, 7}},
		{[]int{0, 5}, nil},
	} {
		var buf bytes.Buffer
		if err := WriteNPYFloat32(&buf, tc.shape, tc.data); err != nil {
			t.Fatal(err)
		}
		if hl := int(buf.Bytes()[8]) | int(buf.Bytes()[9])<<8; (10+hl)%64 != 0 {
			t.Errorf("shape %v: data starts at byte %d, not a multiple of 64", tc.shape, 10+hl)
		}
		a, err := ParseNPY("x", buf.Bytes())
		if err != nil {
			t.Fatalf("shape %v: %v", tc.shape, err)
		}
		got, err := a.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Shape, tc.shape) || !slices.Equal(got, tc.data) && len(tc.data) > 0 {
			t.Errorf("read back shape %v data %v, want %v %v", a.Shape, got, tc.shape, tc.data)
		}
	}
	if err := WriteNPYFloat32(&bytes.Buffer{}, []int{2, 2}, []float32{1}); err == nil {
		t.Error("3 missing values: no error")
	}
}
