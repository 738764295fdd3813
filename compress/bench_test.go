package compress

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The codecs run inside every halo exchange; issue 5 asks that compressing
// and decompressing cost under 10% of an epoch. These measure throughput on
// a 256-wide message of 4096 rows (4 MiB).
func BenchmarkCodecs(b *testing.B) {
	const rows, width = 4096, 256
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, rows*width)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, rows*width)
	for _, name := range Names {
		for _, ratio := range []float64{1, 8} {
			c, _ := New(name)
			if c.FixedRatio(width) != 0 && ratio != 1 {
				continue
			}
			b.Run(fmt.Sprintf("%s/r=%g", name, ratio), func(b *testing.B) {
				b.SetBytes(int64(4 * rows * width))
				var buf []byte
				for i := range b.N {
					key := Key{Seed: 1, Step: i}
					buf = c.Encode(buf[:0], x, rows, width, ratio, key)
					if err := c.Decode(out, rows, width, ratio, key, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
