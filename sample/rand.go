package sample

import "math/bits"

// Every random choice of a sampler comes from a counter-based generator
// keyed by what it is for: (seed, epoch, layer, node) for a node's
// neighbours, (seed, epoch) for an epoch's order of seeds, and so on. Any
// thread can draw any node's numbers, in any order, and get the same ones.

// mix is splitmix64's finaliser: a bijection whose output bits each depend
// on every input bit.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// key folds numbers into one 64-bit key.
func key(parts ...uint64) uint64 {
	k := uint64(0x6772616674) // "graft"
	for _, p := range parts {
		k = mix(k ^ p)
	}
	return k
}

// stream is a generator seeded by a key.
type stream struct{ s uint64 }

func (r *stream) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// intn returns a number in [0, n) (n > 0), by Lemire's multiply-shift; the
// bias, below n/2⁶⁴, is far below anything a sample could show.
func (r *stream) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// float returns a number in [0, 1) with 53 random bits.
func (r *stream) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// Purposes of keys, so that streams for different uses never coincide.
const (
	purposeOrder = iota + 1
	purposeNeighbors
	purposeNodes
	purposeEdges
	purposeWalks
	purposeClusters
	purposePresample // GraphSAINT's pre-sampling, keyed further by the batches' purpose
)
