package prefetch

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A prefetch changes no value, of the slice or of the indices, whatever
// the indices: in range, past the end or negative, empty or not.
func TestPrefetchChangesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 1000} {
		b32, b64 := make([]int32, n), make([]int64, n)
		for i := range b32 {
			b32[i], b64[i] = r.Int32(), r.Int64()
		}
		var idx []int32
		for range 3 * n {
			idx = append(idx, int32(r.IntN(2*n+3)-n-1))
		}
		w32, w64, wIdx := slices.Clone(b32), slices.Clone(b64), slices.Clone(idx)
		Int32s(b32, idx)
		Int64s(b64, idx)
		Int32s(b32, nil)
		Int64s(nil, idx)
		if !slices.Equal(b32, w32) || !slices.Equal(b64, w64) || !slices.Equal(idx, wIdx) {
			t.Fatalf("%d elements: a prefetch changed a value", n)
		}
	}
}

// BenchmarkLookup reads a table of 64 MB at random indices in groups of
// 64, each group with the group two ahead prefetched or not: the rate of
// the dependent reads a lookup loop makes.
func BenchmarkLookup(b *testing.B) {
	table := make([]int32, 16<<20)
	for i := range table {
		table[i] = int32(i)
	}
	r := rand.New(rand.NewPCG(3, 4))
	idx := make([]int32, 1<<20)
	for i := range idx {
		idx[i] = int32(r.IntN(len(table)))
	}
	const group, ahead = 64, 2
	for _, pf := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "prefetched"}[pf]
		b.Run(name, func(b *testing.B) {
			var sum int32
			for b.Loop() {
				for lo := 0; lo < len(idx); lo += group {
					if a := lo + ahead*group; pf && a < len(idx) {
						Int32s(table, idx[a:min(a+group, len(idx))])
					}
					for _, i := range idx[lo:min(lo+group, len(idx))] {
						// Each read depends on the one before, as a table
						// lookup that appends a new node does.
						sum += table[(int(i)+int(sum&1))%len(table)]
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(idx)), "ns/read")
			if sum == 42 {
				b.Log(sum)
			}
		})
	}
}
