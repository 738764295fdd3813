package vec

import "math"

// SignBits sets bits to one bit per value of x: bit j%64 of bits[j/64] is
// set where x[j] > 0 (not for NaN, -0 or +0), and the bits past len(x) in
// the last word are clear. len(bits) must be (len(x)+63)/64. A ReLU's
// backward pass needs only these bits of its output (KeepByBits).
func SignBits(bits []uint64, x []float32) {
	if len(bits) != (len(x)+63)/64 {
		panic("vec: SignBits: want a word of bits per 64 values")
	}
	impl.signBits(bits, x)
}

// KeepByBits sets x[j] to x[j]·scale where bit j%64 of bits[j/64] is set
// and to +0 where it is clear: ReLU's backward pass from the bits SignBits
// kept of its output, with a dropout's scale fused (1 for none: x·1 is x).
// len(bits) must be (len(x)+63)/64.
func KeepByBits(x []float32, bits []uint64, scale float32) {
	if len(bits) != (len(x)+63)/64 {
		panic("vec: KeepByBits: want a word of bits per 64 values")
	}
	impl.keepByBits(x, bits, scale)
}

func signBitsGeneric(bits []uint64, x []float32) {
	for w := range bits {
		var word uint64
		for j, v := range x[64*w : min(64*w+64, len(x))] {
			word |= positiveBit(v) << j
		}
		bits[w] = word
	}
}

// positiveBit is 1 where v > 0 and 0 elsewhere, without a branch, which a
// ReLU's output would mispredict half the time: with b = v's bits − 1,
// v > 0 exactly when 0 ≤ b < the bits of +Inf (0x7f800000); ^b has its
// sign bit set when b ≥ 0, and b − 0x7f800000 when b is below it.
func positiveBit(v float32) uint64 {
	b := int64(math.Float32bits(v)) - 1
	return uint64(^b&(b-0x7f800000)) >> 63
}

func keepByBitsGeneric(x []float32, bits []uint64, scale float32) {
	for j := range x {
		keep := -uint32(bits[j>>6] >> (j & 63) & 1) // all ones or none
		x[j] = math.Float32frombits(math.Float32bits(x[j]*scale) & keep)
	}
}
