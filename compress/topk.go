package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// topK keeps, in every row, the entries of largest magnitude with their
// column indices, as many as fit the requested byte ratio. It is biased
// (small entries are always dropped) but keeps the row's energy.
type topK struct {
	order []int32 // scratch
}

func (t *topK) Name() string           { return "topk" }
func (t *topK) FixedRatio(int) float64 { return 0 }

func indexBytes(width int) int {
	if width <= 1<<16 {
		return 2
	}
	return 4
}

// kept is the entries per row that fit ratio: each costs 4 bytes of value
// plus its index.
func (t *topK) kept(width int, ratio float64) int {
	if ratio < 1 {
		ratio = 1
	}
	k := int(float64(4*width) / (ratio * float64(4+indexBytes(width))))
	return min(k, width)
}

func (t *topK) Encode(dst []byte, x []float32, rows, width int, ratio float64, _ Key) []byte {
	k := t.kept(width, ratio)
	ib := indexBytes(width)
	if cap(t.order) < width {
		t.order = make([]int32, width)
	}
	for i := range rows {
		row := x[i*width : (i+1)*width]
		order := t.order[:width]
		for j := range order {
			order[j] = int32(j)
		}
		// Largest magnitude first; ties by column so the result is deterministic.
		slices.SortFunc(order, func(a, b int32) int {
			va, vb := math.Abs(float64(row[a])), math.Abs(float64(row[b]))
			switch {
			case va > vb:
				return -1
			case va < vb:
				return 1
			}
			return int(a - b)
		})
		for _, j := range order[:k] {
			if ib == 2 {
				dst = binary.LittleEndian.AppendUint16(dst, uint16(j))
			} else {
				dst = binary.LittleEndian.AppendUint32(dst, uint32(j))
			}
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(row[j]))
		}
	}
	return dst
}

func (t *topK) Decode(out []float32, rows, width int, ratio float64, _ Key, src []byte) error {
	k := t.kept(width, ratio)
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
