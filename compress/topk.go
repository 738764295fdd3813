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
	mags, best []float32 // scratch
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
		// The k-th largest magnitude; entries above it are kept, and ties
		// at it by lowest column, so the result is deterministic.
		mags := t.mags[:width]
		for j, v := range row {
			mags[j] = mag(v)
		}
		var thr float32
		if k <= width/4 {
			thr = kthLargestSmall(mags, k, &t.best)
		} else {
			thr = kthLargest(mags, k)
		}
		above := 0
		for _, v := range row {
			if mag(v) > thr {
				above++
			}
		}
		ties := k - above
		for j, v := range row {
			a := mag(v)
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

// mag is |v|, or −1 for NaN so that NaNs are kept last and every row
// still sends exactly k entries.
func mag(v float32) float32 {
	if v != v {
		return -1
	}
	return math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
}

// kthLargestSmall returns the k-th largest value of a (1 ≤ k ≤ len(a))
// for small k: the k largest so far, kept sorted in *best, and a value
// enters only if it beats the smallest of them, which after the first few
// values is rare, so the test predicts well (quickselect's partitioning
// branches do not).
func kthLargestSmall(a []float32, k int, best *[]float32) float32 {
	if cap(*best) < k {
		*best = make([]float32, k)
	}
	b := (*best)[:k]
	for i, v := range a[:k] { // insertion sort, descending
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
// reordering a (quickselect).
func kthLargest(a []float32, k int) float32 {
	lo, hi, want := 0, len(a)-1, k-1 // index in descending order
	for lo < hi {
		mid := lo + (hi-lo)/2
		// Median of three as the pivot.
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
