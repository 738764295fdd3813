package prefetch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/internal/hugepage"
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
		f32, u16 := make([]float32, n), make([]uint16, n)
		for i := range f32 {
			f32[i], u16[i] = r.Float32(), uint16(r.Uint32())
		}
		w32, w64, wf32, wu16, wIdx := slices.Clone(b32), slices.Clone(b64), slices.Clone(f32), slices.Clone(u16), slices.Clone(idx)
		Int32s(b32, idx)
		Int64s(b64, idx)
		Int32s(b32, nil)
		Int64s(nil, idx)
		for _, width := range []int{1, 3, 16, 100} { // rows past the end, too
			Float32Rows(f32, width, idx)
			Uint16Rows(u16, width, idx)
		}
		Float32Rows(f32, 0, idx)
		Uint16Rows(u16, 0, idx)
		if !slices.Equal(b32, w32) || !slices.Equal(b64, w64) || !slices.Equal(f32, wf32) || !slices.Equal(u16, wu16) || !slices.Equal(idx, wIdx) {
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

// BenchmarkRowGather copies rows of 100 float32s (a feature row) from
// random places of a 512 MB matrix on huge pages, as a batch's feature
// gather does: without prefetching (none), prefetching one row 8 ahead of
// each copy (ahead=8), or prefetching groups of rows a group ahead, as
// minibatch's gather does: 30 rows (12 KiB, its groups on AMD's cores) or
// 6 (2.4 KB, on Intel's).
func BenchmarkRowGather(b *testing.B) {
	const width = 100
	src := hugepage.Float32s(128 << 20)
	for i := range src {
		src[i] = float32(i)
	}
	rows := len(src) / width
	r := rand.New(rand.NewPCG(5, 6))
	idx := make([]int32, 1<<18)
	for i := range idx {
		idx[i] = int32(r.IntN(rows))
	}
	dst := make([]float32, len(idx)*width)
	copyRow := func(i int) {
		v := int(idx[i])
		copy(dst[i*width:(i+1)*width], src[v*width:(v+1)*width])
	}
	groups := func(group int) {
		for g := 0; g < len(idx); g += group {
			end := min(g+group, len(idx))
			Float32Rows(src, width, idx[end:min(end+group, len(idx))])
			for i := g; i < end; i++ {
				copyRow(i)
			}
		}
	}
	ways := []struct {
		name   string
		gather func()
	}{
		{"none", func() {
			for i := range idx {
				copyRow(i)
			}
		}},
		{"ahead=8", func() {
			for i := range idx {
				if a := i + 8; a < len(idx) {
					Float32Rows(src, width, idx[a:a+1])
				}
				copyRow(i)
			}
		}},
		{"groups=30", func() { groups(30) }},
		{"groups=6", func() { groups(6) }},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				w.gather()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(idx)), "ns/row")
		})
	}
}
