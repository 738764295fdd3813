package decentral

import "math/rand/v2"

// Streams of random numbers, one per purpose, so adding a draw in one place
// never shifts another.
const (
	streamInit uint64 = iota + 1
	streamGraph
	streamData
	streamTest
	streamTeacher
	streamExplore
	streamFaults
)

func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}
