package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// The plain delta coder as of commit b1b2f45, kept as the reference the
// fused encoder and decoder (and their kernels) must match bit for bit:
// accuracy runs made with it stay valid. It keeps its state in a Delta's
// streams, as the codec does.

func refDeltaEncode(d *Delta, dst []byte, x []float32, rows, width int, ratio float64, key Key) []byte {
	s := d.stream(key, false, rows, width)
	start := len(dst)
	dst = slices.Grow(dst, (rows+7)/8)[:start+(rows+7)/8]
	clear(dst[start:])
	diff := make([]float32, width)
	bits := d.BitsAt(ratio)
	rb := rowBytes(bits, width)
	for i := range rows {
		row, rec := x[i*width:(i+1)*width], s.recon[i*width:(i+1)*width]
		for j, v := range row {
			diff[j] = v - rec[j]
		}
		stale := s.skipped[i] < 0 || d.MaxStale > 0 && int(s.skipped[i])+1 >= d.MaxStale
		if !stale && d.Threshold > 0 && refSmall(diff, row, d.Threshold) {
			s.skipped[i]++
			continue
		}
		dst[start+i/8] |= 1 << (i % 8)
		at := len(dst)
		dst = slices.Grow(dst, rb)[:at+rb]
		if bits == 32 {
			AppendFloats(dst[at:at], row)
		} else {
			refQuantiseRow(dst[at:], diff, bits)
		}
		refApplyRow(rec, dst[at:], bits)
		s.skipped[i] = 0
	}
	return dst
}

func refSmall(diff, row []float32, threshold float64) bool {
	var dd, xx float64
	for j, v := range row {
		dd += float64(diff[j]) * float64(diff[j])
		xx += float64(v) * float64(v)
	}
	return dd < threshold*threshold*xx
}

func refQuantiseRow(b []byte, diff []float32, bits int) {
	lo, hi := rowMinMax(diff)
	levels := float32(uint32(1)<<bits - 1)
	lo16 := bf16Down(lo)
	lo = fromBF16(lo16)
	step16 := bf16Up((hi - lo) / levels)
	step := fromBF16(step16)
	inv := 1 / step
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	if !finite(lo) || !finite(step) || step < 0 || step > 0 && !finite(inv) {
		lo16, step16 = 0, 0
	}
	if step16 == 0 {
		inv = 0
	}
	binary.LittleEndian.PutUint16(b, lo16)
	binary.LittleEndian.PutUint16(b[2:], step16)
	codes := b[deltaHeader:]
	top := float32(levels)
	per := 8 / bits
	for at := 0; at < len(diff); at += per {
		var c byte
		for k, v := range diff[at:min(at+per, len(diff))] {
			q := float32(v-lo)*inv + 0.5
			if !(q >= 1) {
				q = 0
			} else if q > top {
				q = top
			}
			c |= byte(uint32(q)) << (k * bits)
		}
		codes[at/per] = c
	}
}

func refApplyRow(rec []float32, b []byte, bits int) {
	if bits == 32 {
		readFloats(rec, b)
		return
	}
	lo := fromBF16(binary.LittleEndian.Uint16(b))
	step := fromBF16(binary.LittleEndian.Uint16(b[2:]))
	codes := b[deltaHeader:]
	if bits == 8 {
		for j := range rec {
			rec[j] = rec[j] + (lo + float32(float32(codes[j])*step))
		}
		return
	}
	var tab [16]float32
	for k := range 1 << bits {
		tab[k] = lo + float32(float32(k)*step)
	}
	per, mask := 8/bits, byte(1)<<bits-1
	for at := 0; at < len(rec); at += per {
		c := codes[at/per]
		r := rec[at:min(at+per, len(rec))]
		for k := range r {
			r[k] = r[k] + tab[c>>(k*bits)&mask&15]
		}
	}
}

// refDeltaDecode is Decode without its checks of the message's size.
func refDeltaDecode(d *Delta, out []float32, rows, width int, ratio float64, key Key, src []byte) {
	nb := (rows + 7) / 8
	bits := d.BitsAt(ratio)
	rb := rowBytes(bits, width)
	s := d.stream(key, true, rows, width)
	at := nb
	for i := range rows {
		if src[i/8]>>(i%8)&1 == 0 {
			s.skipped[i]++
			continue
		}
		refApplyRow(s.recon[i*width:(i+1)*width], src[at:at+rb], bits)
		s.skipped[i] = 0
		at += rb
	}
	copy(out[:rows*width], s.recon)
}

// deltaSource makes streams of rows for the reference tests: rows that
// drift by a step's change at mixed scales, rows that stay put (a zero
// difference), rows of zeros, rows of one repeated value, and rows whose
// magnitudes span many decades.
type deltaSource struct {
	r     *rand.Rand
	x     []float32
	scale []float32 // per row
}

func newDeltaSource(r *rand.Rand, rows, width int) *deltaSource {
	s := &deltaSource{r: r, x: make([]float32, rows*width), scale: make([]float32, rows)}
	for i := range s.scale {
		s.scale[i] = float32(math.Pow(10, float64(r.IntN(16)-8)))
	}
	for i := range s.x {
		s.x[i] = s.scale[i/max(width, 1)] * float32(r.NormFloat64())
	}
	return s
}

func (s *deltaSource) next(width int) []float32 {
	for i := range s.scale {
		row := s.x[i*width : (i+1)*width]
		switch s.r.IntN(10) {
		case 0: // unchanged
		case 1:
			clear(row)
		case 2:
			v := s.scale[i] * float32(s.r.NormFloat64())
			for j := range row {
				row[j] = v
			}
		case 3: // any magnitudes
			for j := range row {
				row[j] = float32(s.r.NormFloat64() * math.Pow(10, float64(s.r.IntN(40)-20)))
			}
		case 4: // ReLU-like: zeros and small positive changes
			for j := range row {
				row[j] = max(0, row[j]+s.scale[i]*float32(s.r.NormFloat64()))
			}
		default: // a drift of some relative size
			f := s.scale[i] * float32(math.Pow(10, float64(s.r.IntN(5)-4)))
			for j := range row {
				row[j] += f * float32(s.r.NormFloat64())
			}
		}
	}
	return s.x
}

// The codec's messages, the sender's and the receiver's reconstructions
// and skip counts are the reference coder's, bit for bit, over random
// shapes, bit widths, thresholds and staleness bounds, message after
// message.
func TestDeltaMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	trials := 400
	if testing.Short() {
		trials = 60
	}
	for trial := range trials {
		rows, width := 1+r.IntN(40), r.IntN(140)
		if trial%4 == 0 {
			width = []int{1, 7, 10, 15, 16, 17, 31, 32, 33, 64, 100}[r.IntN(11)]
		}
		bits := []int{1, 2, 4, 8, 32}[r.IntN(5)]
		threshold := []float64{0, 0, 0.001, 0.05, 0.3}[r.IntN(5)]
		maxStale := []int{0, 0, 1, 2, 5}[r.IntN(5)]
		spec := fmt.Sprintf("delta:%d:%g:%d", bits, threshold, maxStale)
		send, recv := newDelta(t, spec), newDelta(t, spec)
		rsend, rrecv := newDelta(t, spec), newDelta(t, spec)
		src := newDeltaSource(r, rows, width)
		out, rout := make([]float32, rows*width), make([]float32, rows*width)
		key := Key{Layer: 1, From: 2, To: 3}
		var msg, rmsg []byte
		for step := range 6 {
			key.Step = step
			x := src.next(width)
			msg = send.Encode(msg[:0], x, rows, width, 1, key)
			rmsg = refDeltaEncode(rsend, rmsg[:0], x, rows, width, 1, key)
			if !bytes.Equal(msg, rmsg) {
				t.Fatalf("%s %d×%d step %d: message\n%x\nreference\n%x", spec, rows, width, step, msg, rmsg)
			}
			if err := recv.Decode(out, rows, width, 1, key, msg); err != nil {
				t.Fatal(err)
			}
			refDeltaDecode(rrecv, rout, rows, width, 1, key, rmsg)
			if !slices.Equal(float32Bits(out), float32Bits(rout)) {
				t.Fatalf("%s %d×%d step %d: decoded rows differ from the reference's", spec, rows, width, step)
			}
			for _, p := range [][2]*Delta{{send, rsend}, {recv, rrecv}} {
				for id, s := range p[0].streams {
					rs := p[1].streams[id]
					if !slices.Equal(float32Bits(s.recon), float32Bits(rs.recon)) || !slices.Equal(s.skipped, rs.skipped) {
						t.Fatalf("%s %d×%d step %d: stream %+v differs from the reference's", spec, rows, width, step, id)
					}
				}
			}
		}
	}
}

// BenchmarkDelta encodes and decodes delta messages of 3,000 rows, the
// size of a worker's messages on Amazon Computers at 4 parts, at widths
// 10 and 32 (its classes and hidden width) and 64, in a stream that has
// warmed up: every row is sent (threshold 0), its difference a small
// drift. ns/value is per value of the rows.
func BenchmarkDelta(b *testing.B) {
	for _, width := range []int{10, 32, 64} {
		for _, bits := range []int{1, 2, 4, 8} {
			benchDeltaStream(b, fmt.Sprintf("w=%d/bits=%d", width, bits), fmt.Sprintf("delta:%d:0:0", bits), 3000, width, 4)
		}
	}
}

// benchDeltaStream times spec's encoder and decoder on a stream of rows×
// width messages that has warmed up over steps drifting messages (every
// row sent, threshold 0), as sub-benchmarks name/encode and name/decode.
func benchDeltaStream(b *testing.B, name, spec string, rows, width, steps int) {
	benchDeltaStreamAt(b, name, spec, rows, width, steps, false)
}

// benchDeltaStreamAt is benchDeltaStream with the reconstructions kept in
// bfloat16 if bf16 (Delta.BF16).
func benchDeltaStreamAt(b *testing.B, name, spec string, rows, width, steps int, bf16 bool) {
	src := newDrift(rows, width, 0.01, 7)
	var xs [][]float32
	for range steps {
		xs = append(xs, slices.Clone(src.next()))
	}
	d, _ := New(spec)
	d.Caps().Streaming.SetBF16(bf16)
	var msgs [][]byte
	for i, x := range xs {
		msgs = append(msgs, d.Encode(nil, x, rows, width, 1, Key{Step: i}))
	}
	var cpu0 time.Duration
	report := func(b *testing.B) {
		b.SetBytes(int64(4 * rows * width))
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*width), "ns/value")
		// CPU time is steadier than wall time on a busy machine.
		b.ReportMetric(float64((sysstat.CPUTime()-cpu0).Nanoseconds())/float64(b.N*rows*width), "cpu-ns/value")
	}
	b.Run(name+"/encode", func(b *testing.B) {
		var buf []byte
		cpu0 = sysstat.CPUTime()
		for i := range b.N {
			buf = d.Encode(buf[:0], xs[i%steps], rows, width, 1, Key{Step: steps + i})
		}
		report(b)
	})
	r, _ := New(spec)
	r.Caps().Streaming.SetBF16(bf16)
	out := make([]float32, rows*width)
	b.Run(name+"/decode", func(b *testing.B) {
		cpu0 = sysstat.CPUTime()
		for i := range b.N {
			if err := r.Decode(out, rows, width, 1, Key{Step: i}, msgs[i%steps]); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}

// BenchmarkDeltaOutOfCache is BenchmarkDelta for a message the size of a
// worker's halo on the synthetic ogbn-arxiv-sized graph at N = 4 (124k
// rows), whose rows and reconstruction do not fit in cache: there the
// kernels wait on memory unless they prefetch. ns/value is per value.
func BenchmarkDeltaOutOfCache(b *testing.B) {
	for _, width := range []int{64, 128} {
		benchDeltaStream(b, fmt.Sprintf("w=%d", width), "delta:2:0:0", 124000, width, 2)
	}
}
