package tensor

import (
	"math"
	"testing"

	"github.com/graft-gnn/graft/internal/bf16"
)

// MatrixToBF16 rounds every value as bf16.FromFloat32 does, keeps the
// shape, and holds two bytes a value.
func TestMatrixToBF16(t *testing.T) {
	m := New(3, 5)
	for i := range m.Data {
		m.Data[i] = float32(math.Sin(float64(i)+0.3)) * float32(math.Pow(10, float64(i%7-3)))
	}
	h := MatrixToBF16(m)
	if h.Rows != 3 || h.Cols != 5 || len(h.Data) != 15 || h.Bytes() != 30 {
		t.Fatalf("%d×%d, %d values, %d bytes", h.Rows, h.Cols, len(h.Data), h.Bytes())
	}
	for i, v := range m.Data {
		if h.Data[i] != bf16.FromFloat32(v) {
			t.Fatalf("value %d: %#04x, want %#04x", i, h.Data[i], bf16.FromFloat32(v))
		}
	}
}
