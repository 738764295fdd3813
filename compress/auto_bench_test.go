package compress

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// BenchmarkAuto times the codec of --compress auto (entropy:delta:2:0:0)
// through Encode and Decode alone, on streams shaped as the halo
// exchange's: a worker's messages on Amazon Computers at 4 parts (3,000
// rows of the hidden width 32, ReLU activations that drift; of the 10
// classes, gradients zero in 90% of the rows) and on the synthetic
// ogbn-arxiv-sized graph (41,000 rows of 64, which do not fit in cache).
// Each stream has warmed up over a few messages. ns/value is per value
// of the rows, one encode or one decode; cpu-ns/value the process's CPU
// time, steadier than wall time on a busy machine.
func BenchmarkAuto(b *testing.B) {
	for _, c := range []struct {
		name        string
		rows, width int
		zeroRows    float64
	}{
		{"amazon/activations", 3000, 32, 0},
		{"amazon/gradients", 3000, 10, 0.9},
		{"synthetic/activations", 41000, 64, 0},
	} {
		const steps = 4
		r := rand.New(rand.NewPCG(7, uint64(c.width)))
		x := make([]float32, c.rows*c.width)
		for i := range x {
			x[i] = float32(max(0, r.NormFloat64()))
		}
		var xs [][]float32
		for range steps {
			next := make([]float32, len(x))
			for i := range x {
				x[i] = max(0, x[i]+0.05*float32(r.NormFloat64()))
				next[i] = x[i]
			}
			clear(next[:int(c.zeroRows*float64(c.rows))*c.width])
			xs = append(xs, next)
		}
		send, _ := New(AutoCodec(false))
		var msgs [][]byte
		for i, x := range xs {
			msgs = append(msgs, send.Encode(nil, x, c.rows, c.width, 1, Key{Step: i, Backward: c.zeroRows > 0}))
		}
		var cpu0 time.Duration
		report := func(b *testing.B) {
			n := float64(b.N * c.rows * c.width)
			b.SetBytes(int64(4 * c.rows * c.width))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/value")
			b.ReportMetric(float64((sysstat.CPUTime()-cpu0).Nanoseconds())/n, "cpu-ns/value")
		}
		b.Run(fmt.Sprintf("%s/w=%d/encode", c.name, c.width), func(b *testing.B) {
			var buf []byte
			cpu0 = sysstat.CPUTime()
			for i := range b.N {
				buf = send.Encode(buf[:0], xs[i%steps], c.rows, c.width, 1, Key{Step: steps + i, Backward: c.zeroRows > 0})
			}
			report(b)
		})
		recv, _ := New(AutoCodec(false))
		out := make([]float32, c.rows*c.width)
		b.Run(fmt.Sprintf("%s/w=%d/decode", c.name, c.width), func(b *testing.B) {
			cpu0 = sysstat.CPUTime()
			for i := range b.N {
				if err := recv.Decode(out, c.rows, c.width, 1, Key{Step: i, Backward: c.zeroRows > 0}, msgs[i%steps]); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
	}
}
