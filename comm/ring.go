package comm

import (
	"unsafe"

	"github.com/graft-gnn/graft/internal/vec"
)

// ringChunkValues is the most float32 values one ring message carries
// (4 MiB). Open MPI and our own measurements show that larger messages are
// slower, and it bounds every frame a peer has to buffer.
const ringChunkValues = 1 << 20

// The canonical summation order of AllReduce, shared by every transport so
// that one process and many give bit-identical sums:
//
// The buffer is cut into rounds of at most size·ringChunkValues values; round
// [lo,hi) is cut into size chunks, chunk k being ringChunk(lo, hi, k, size).
// Every value of chunk k is summed starting with rank k's value, then adding
// rank k+1's, k+2's, … modulo size: ((x_k + x_{k+1}) + x_{k+2}) + …
//
// This is the order in which a ring reduce-scatter accumulates, so the TCP
// ring follows it without extra work and Group reproduces it in memory.

// ringRound returns the end of the round that starts at lo.
func ringRound(lo, n, size int) int { return min(n, lo+size*ringChunkValues) }

// ringBytesSent is the bytes rank r sends to the next rank in a ring
// all-reduce of n values over size ranks: in each round, every chunk but
// chunk r+1 in the reduce-scatter and every chunk but chunk r+2 in the
// all-gather. Chunks differ in length when size does not divide a round,
// so ranks send different counts; two ranks, which swap their buffers,
// send n values each, as the formula gives.
func ringBytesSent(n, size, r int) int64 {
	var values int
	for lo := 0; lo < n; {
		hi := ringRound(lo, n, size)
		a, b := ringChunk(lo, hi, (r+1)%size, size)
		c, d := ringChunk(lo, hi, (r+2)%size, size)
		values += 2*(hi-lo) - (b - a) - (d - c)
		lo = hi
	}
	return 4 * int64(values)
}

// ringChunk returns the bounds of chunk k of round [lo,hi).
func ringChunk(lo, hi, k, size int) (int, int) {
	m := hi - lo
	return lo + m*k/size, lo + m*(k+1)/size
}

// canonicalSum writes into dst[lo:hi] the sum of inputs[·][lo:hi], starting
// with rank first and going round the ring.
func canonicalSum(dst []float32, inputs [][]float32, lo, hi, first int) {
	size := len(inputs)
	copy(dst[lo:hi], inputs[first][lo:hi])
	for j := 1; j < size; j++ {
		addInto(dst[lo:hi], inputs[(first+j)%size][lo:hi])
	}
}

// addInto sets acc[i] = acc[i] + x[i]; the accumulated value comes first, as
// on the ring.
func addInto(acc, x []float32) { vec.Add(acc, acc, x) }

// float32Bytes views f as bytes, without copying, in the machine's byte
// order (every supported platform is little-endian; peers check it).
func float32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}
