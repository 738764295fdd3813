package dropmask

import (
	"math"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// Mix64 is splitmix64's finaliser: a bijection on uint64 whose output bits
// each depend on every input bit.
func Mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// group is the number of columns that share one 64-bit hash, a 16-bit lane
// each.
const group = 4

// Drop is the threshold that drops every element (p ≥ 1).
const Drop = 1 << 16

// Threshold returns the 16-bit lane value below which an element is dropped
// with probability p, rounded to a multiple of 2⁻¹⁶; Drop drops everything.
func Threshold(p float64) int32 {
	if p >= 1 {
		return Drop
	}
	if p <= 0 {
		return 0
	}
	return int32(math.Round(p * (1 << 16)))
}

// hash is the hash of column group q of row.
func hash(key, row, q uint64) uint64 { return Mix64(key ^ (row<<32 | q&0xffffffff)) }

// keepBits returns all ones when the 16-bit lane keeps its element and 0
// when it drops it.
func keepBits(lane uint64, thr int32) uint32 {
	return ^uint32((int32(lane&0xffff) - thr) >> 31)
}

// Keep reports whether element (row, col) is kept under key and thr.
func Keep(key, row, col uint64, thr int32) bool {
	return keepBits(hash(key, row, col/group)>>(16*(col%group)), thr) != 0
}

// Apply sets y[j] = x[j]·scale where element (row, j) is kept and +0 where
// it is dropped. y may alias x and must be at least as long.
func Apply(y, x []float32, key, row uint64, thr int32, scale float32) {
	y = y[:len(x)]
	if thr < Drop {
		switch level { // direct calls: a func value would make y and x escape
		case cpuid.AVX512:
			applyAVX512(y, x, key, row<<32, thr, scale)
			return
		case cpuid.AVX2:
			applyAVX2(y, x, key, row<<32, thr, scale)
			return
		}
	}
	applyFrom(y, x, 0, key, row, thr, scale)
}

// Words is the number of uint64 words KeepBits writes for n columns.
func Words(n int) int { return (n + 63) / 64 }

// KeepBits sets bit j%64 of dst[j/64] when element (row, j) is kept and
// clears it when it is dropped, for j < n: the decisions Apply takes, 64
// to a word (a thirty-second of the bytes of the row of float32 they decide).
// The bits of dst's last word past n are cleared; dst must hold Words(n)
// words.
func KeepBits(dst []uint64, n int, key, row uint64, thr int32) {
	if n <= 0 {
		return
	}
	w := Words(n)
	dst = dst[:w]
	if thr < Drop {
		switch level {
		case cpuid.AVX512:
			dst[w-1] = 0 // the kernel may stop half way through it
			keepBitsAVX512(dst, n, key, row<<32, thr)
			return
		case cpuid.AVX2:
			dst[w-1] = 0
			keepBitsAVX2(dst, n, key, row<<32, thr)
			return
		}
	}
	keepBitsFrom(dst, n, key, row, thr)
}

// keepBitsFrom is KeepBits' pure-Go twin.
func keepBitsFrom(dst []uint64, n int, key, row uint64, thr int32) {
	clear(dst[:Words(n)])
	for q := 0; q*group < n; q++ {
		h := hash(key, row, uint64(q))
		for k := range min(group, n-q*group) {
			j := q*group + k
			dst[j/64] |= uint64(keepBits(h>>(16*k), thr)&1) << (j % 64)
		}
	}
}

// level is the level of Apply's assembly kernel for thr < Drop, the widest
// the CPU and build allow; Generic means Apply runs the twin.
var level = kernelLevel(cpuid.Detected)

// applyFrom is Apply's pure-Go twin from column j0, a multiple of group, on.
func applyFrom(y, x []float32, j0 int, key, row uint64, thr int32, scale float32) {
	n := len(x)
	j := j0
	for q := uint64(j0 / group); j+group <= n; q++ {
		h := hash(key, row, q)
		xs, ys := x[j:j+4:j+4], y[j:j+4:j+4]
		ys[0] = math.Float32frombits(math.Float32bits(xs[0]*scale) & keepBits(h, thr))
		ys[1] = math.Float32frombits(math.Float32bits(xs[1]*scale) & keepBits(h>>16, thr))
		ys[2] = math.Float32frombits(math.Float32bits(xs[2]*scale) & keepBits(h>>32, thr))
		ys[3] = math.Float32frombits(math.Float32bits(xs[3]*scale) & keepBits(h>>48, thr))
		j += group
	}
	if j < n {
		h := hash(key, row, uint64(j/group))
		for ; j < n; j++ {
			y[j] = math.Float32frombits(math.Float32bits(x[j]*scale) & keepBits(h, thr))
			h >>= 16
		}
	}
}
