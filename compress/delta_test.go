package compress

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/memacct"
)

func newDelta(t *testing.T, spec string) *Delta {
	t.Helper()
	c, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := c.(*Delta)
	if !ok {
		t.Fatalf("New(%q) is a %T", spec, c)
	}
	return d
}

// drift is a stream of rows that change a little at every step, as a
// boundary row's activations do late in training: x₀ random, then
// x_{t+1} = x_t + scale·noise.
type drift struct {
	x     []float32
	rng   *rand.Rand
	scale float32
}

func newDrift(rows, width int, scale float32, seed uint64) *drift {
	d := &drift{x: make([]float32, rows*width), rng: rand.New(rand.NewPCG(seed, 1)), scale: scale}
	for i := range d.x {
		d.x[i] = float32(d.rng.NormFloat64())
	}
	return d
}

func (d *drift) next() []float32 {
	for i := range d.x {
		d.x[i] += d.scale * float32(d.rng.NormFloat64())
	}
	return d.x
}

// Sender and receiver keep the same reconstruction bit for bit, whatever
// the bits, threshold and staleness bound; the receiver's rows are it.
func TestDeltaEndsAgree(t *testing.T) {
	for _, spec := range []string{"delta:1", "delta:2:0.05:4", "delta:4:0.2", "delta:8:0.01:2", "delta:32:0.1:3"} {
		t.Run(spec, func(t *testing.T) {
			const rows, width = 37, 20
			send, recv := newDelta(t, spec), newDelta(t, spec)
			src := newDrift(rows, width, 0.05, 1)
			out := make([]float32, rows*width)
			for step := range 30 {
				key := Key{Seed: 3, Step: step, Layer: 1, From: 0, To: 2}
				msg := send.Encode(nil, src.next(), rows, width, 1, key)
				if err := recv.Decode(out, rows, width, 1, key, msg); err != nil {
					t.Fatal(err)
				}
				s := send.streams[streamEnd{streamOf(key), false}]
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(s.recon[i]) {
						t.Fatalf("step %d value %d: receiver %v, sender's copy %v", step, i, out[i], s.recon[i])
					}
				}
			}
			for id, s := range send.streams {
				r := recv.streams[streamEnd{id.StreamID, true}]
				if r == nil || !slices.Equal(float32Bits(s.recon), float32Bits(r.recon)) || !slices.Equal(s.skipped, r.skipped) {
					t.Fatalf("the two ends' states of stream %+v differ", id)
				}
			}
		})
	}
}

// At 32 bits with threshold 0 every row arrives exactly, every step.
func TestDeltaExact(t *testing.T) {
	const rows, width = 9, 33
	send, recv := newDelta(t, "delta:32:0"), newDelta(t, "delta:32:0")
	src := newDrift(rows, width, 1e-3, 2)
	out := make([]float32, rows*width)
	for step := range 10 {
		key := Key{Step: step, From: 1, To: 0}
		x := src.next()
		msg := send.Encode(nil, x, rows, width, 1, key)
		if want := (rows+7)/8 + rows*4*width; len(msg) != want {
			t.Fatalf("step %d: %d bytes, want %d", step, len(msg), want)
		}
		if err := recv.Decode(out, rows, width, 1, key, msg); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if math.Float32bits(out[i]) != math.Float32bits(x[i]) {
				t.Fatalf("step %d value %d: %v, sent %v", step, i, out[i], x[i])
			}
		}
	}
}

// Error feedback: after a row is sent, its reconstruction is within half
// a quantisation step of that message's difference (plus rounding: of
// float32, and with the reconstruction in bfloat16 half a bfloat16 ulp,
// at most 2⁻⁸ of the value), at every step, however many steps went
// before: the error does not accumulate. Without the feedback
// (quantising each step's change alone) it would grow like a random walk.
func TestDeltaErrorFeedbackBounded(t *testing.T) {
	for _, bf16 := range []bool{false, true} {
		for _, bits := range []int{1, 2, 4, 8} {
			const rows, width, steps = 16, 48, 200
			d := newDelta(t, "delta:"+string(rune('0'+bits)))
			d.SetBF16(bf16)
			rounding := 0.0 // relative rounding of the stored reconstruction
			if bf16 {
				rounding = 0x1p-8
			}
			src := newDrift(rows, width, 0.02, uint64(bits))
			worst, biggest := 0.0, 0.0
			for step := range steps {
				x := src.next()
				msg := d.Encode(nil, x, rows, width, 1, Key{Step: step})
				s := d.streams[streamEnd{}]
				rb := rowBytes(d.Bits, width)
				for i := range rows {
					b := msg[(rows+7)/8+i*rb:]
					stepSize := float64(fromBF16(uint16(b[2]) | uint16(b[3])<<8))
					for j := range width {
						v, rec := math.Abs(float64(x[i*width+j])), float64(0)
						if bf16 {
							rec = float64(fromBF16(s.half[i*width+j]))
						} else {
							rec = float64(s.recon[i*width+j])
						}
						err := math.Abs(float64(x[i*width+j]) - rec)
						// half a step, the stored reconstruction's rounding,
						// and float32 rounding of values of size ~|x|
						bound := 0.5*stepSize + rounding*(v+0.5*stepSize) + 1e-6*(1+v)
						if err > bound {
							t.Fatalf("bf16 %v, %d bits, step %d, row %d col %d: error %g > %g (half step %g)", bf16, bits, step, i, j, err, bound, stepSize/2)
						}
						if step >= steps/2 {
							worst, biggest = max(worst, err), max(biggest, v)
						}
					}
				}
			}
			// The change per step is ~0.02 per value; once the first
			// message's coarse error has been fed back, the error stays at
			// the scale of one step of that change (plus the rounding), not
			// of 100 steps of drift.
			if limit := 0.2/float64(int(1)<<bits-1) + rounding*biggest; bits > 1 && worst > limit {
				t.Fatalf("bf16 %v, %d bits: worst error %g after %d steps, want below %g", bf16, bits, worst, steps, limit)
			}
		}
	}
}

// A row goes unsent at most MAXSTALE−1 messages in a row: with a
// threshold no change reaches, every row is sent at messages 0, S, 2S, …
// and only then; a skipped row costs its bit of the bitmap.
func TestDeltaStalenessBound(t *testing.T) {
	for _, stale := range []int{1, 2, 3, 7} {
		const rows, width = 21, 16
		d := newDelta(t, "delta:4:1e9:"+string(rune('0'+stale)))
		src := newDrift(rows, width, 0.1, 3)
		rb := rowBytes(d.Bits, width)
		for step := range 20 {
			msg := d.Encode(nil, src.next(), rows, width, 1, Key{Step: step})
			wantSent := 0
			if step%stale == 0 {
				wantSent = rows
			}
			if want := (rows+7)/8 + wantSent*rb; len(msg) != want {
				t.Fatalf("S=%d step %d: %d bytes, want %d (%d rows sent)", stale, step, len(msg), want, wantSent)
			}
		}
	}
	// No bound: after the first message, nothing is sent.
	d := newDelta(t, "delta:4:1e9:0")
	src := newDrift(5, 8, 0.1, 4)
	for step := range 50 {
		msg := d.Encode(nil, src.next(), 5, 8, 1, Key{Step: step})
		if step > 0 && len(msg) != 1 {
			t.Fatalf("step %d: %d bytes, want the bitmap's 1", step, len(msg))
		}
	}
}

// Rows skip exactly when their relative change is below the threshold.
func TestDeltaThresholdSkipsSmallChanges(t *testing.T) {
	const width = 10
	d := newDelta(t, "delta:8:0.1")
	x := make([]float32, 2*width)
	for j := range width {
		x[j], x[width+j] = 1, 1
	}
	d.Encode(nil, x, 2, width, 1, Key{})
	x[0] += 0.05        // row 0: relative change 0.05/√10 — skipped
	x[width] += 0.5 * 4 // row 1: 2/√10 — sent
	msg := d.Encode(nil, x, 2, width, 1, Key{Step: 1})
	if msg[0] != 0b10 || len(msg) != 1+rowBytes(d.Bits, width) {
		t.Fatalf("bitmap %08b, %d bytes: want row 1 alone sent", msg[0], len(msg))
	}
}

// Gradients go through GRAD when given; the forward direction stays delta.
func TestDeltaGradCodec(t *testing.T) {
	d := newDelta(t, "delta:2:0:0:quant4")
	q, _ := New("quant4")
	x := newDrift(3, 40, 1, 5).next()
	key := Key{Step: 4, Layer: 1, From: 2, To: 0, Backward: true}
	if got, want := d.Encode(nil, x, 3, 40, 1, key), q.Encode(nil, x, 3, 40, 1, key); !bytes.Equal(got, want) {
		t.Fatal("the gradient message is not quant4's")
	}
	key.Backward = false
	if got := d.Encode(nil, x, 3, 40, 1, key); len(got) != 1+3*rowBytes(d.Bits, 40) {
		t.Fatalf("forward message of %d bytes", len(got))
	}
	if d.Name() != "delta:2:0:0:quant4" {
		t.Fatalf("Name() = %q", d.Name())
	}
}

// A codec restored from another's state continues exactly as it would have.
func TestDeltaStateRoundTrip(t *testing.T) {
	const rows, width = 11, 24
	a := newDelta(t, "delta:2:0.05:5")
	src := newDrift(rows, width, 0.05, 6)
	keys := []Key{{Layer: 0, From: 0, To: 1}, {Layer: 1, From: 1, To: 0, Backward: true}}
	for step := range 6 {
		for _, k := range keys {
			k.Step = step
			a.Encode(nil, src.next(), rows, width, 1, k)
		}
	}
	st, err := a.StreamState()
	if err != nil {
		t.Fatal(err)
	}
	b := newDelta(t, "delta:2:0.05:5")
	if err := b.RestoreStreams(st); err != nil {
		t.Fatal(err)
	}
	for step := 6; step < 12; step++ {
		x := src.next()
		for _, k := range keys {
			k.Step = step
			if ma, mb := a.Encode(nil, x, rows, width, 1, k), b.Encode(nil, x, rows, width, 1, k); !bytes.Equal(ma, mb) {
				t.Fatalf("step %d: the restored codec's message differs", step)
			}
		}
	}
	for _, bad := range [][]byte{st[:len(st)-1], append(st[:len(st):len(st)], 0), []byte("GRAFTDL0"), st[:10]} {
		if err := b.RestoreStreams(bad); err == nil {
			t.Fatalf("a malformed state of %d bytes was accepted", len(bad))
		}
	}
	if err := b.RestoreStreams(nil); err != nil || len(b.streams) != 0 {
		t.Fatalf("restoring no state: %v, %d streams", err, len(b.streams))
	}
}

// The streams' state counts toward the process's communication memory:
// each end of a stream holds rows×width reconstructed values, 4 bytes
// each (2 in bfloat16), and a 4-byte skip count a row; a stream remade for
// a new shape, state replaced by a restore, and a malformed state
// (duplicated streams included) leave no bytes counted that no stream
// holds.
func TestDeltaStateIsAccounted(t *testing.T) {
	for _, bf16 := range []bool{false, true} {
		t.Run(fmt.Sprintf("bf16=%v", bf16), func(t *testing.T) {
			held := func() int64 { return memacct.Held(memacct.Communication) }
			value := int64(4)
			if bf16 {
				value = 2
			}
			size := func(rows, width int) int64 { return value*int64(rows*width) + 4*int64(rows) }
			send, recv := newDelta(t, "delta:2"), newDelta(t, "delta:2")
			send.SetBF16(bf16)
			recv.SetBF16(bf16)
			start := held()
			step := func(rows, width int, k Key) {
				t.Helper()
				x := newDrift(rows, width, 1, 3).next()
				msg := send.Encode(nil, x, rows, width, 1, k)
				if err := recv.Decode(make([]float32, rows*width), rows, width, 1, k, msg); err != nil {
					t.Fatal(err)
				}
			}
			step(10, 8, Key{})
			step(6, 5, Key{Layer: 1, Backward: true})
			if got, want := held()-start, 2*(size(10, 8)+size(6, 5)); got != want {
				t.Fatalf("two streams at two ends hold %d bytes counted, want %d", got, want)
			}
			step(12, 8, Key{Step: 1}) // the first stream's shape changed
			want := 2 * (size(12, 8) + size(6, 5))
			if got := held() - start; got != want {
				t.Fatalf("after a stream was remade: %d bytes counted, want %d", got, want)
			}
			st, err := recv.StreamState()
			if err != nil {
				t.Fatal(err)
			}
			if err := send.RestoreStreams(st); err != nil {
				t.Fatal(err)
			}
			if got := held() - start; got != want {
				t.Fatalf("after a restore: %d bytes counted, want %d", got, want)
			}
			dup := append([]byte(nil), st...)
			dup[len(deltaStateMagic)] = 3 // three streams: the third is the first again
			first := st[len(deltaStateMagic)+8 : len(deltaStateMagic)+8+48+int(size(12, 8))]
			for _, bad := range [][]byte{append(dup, first...), st[:len(st)-1], append(st[:len(st):len(st)], 0)} {
				if err := send.RestoreStreams(bad); err == nil {
					t.Fatal("a malformed state was accepted")
				}
			}
			if got := held() - start; got != want {
				t.Fatalf("after malformed states were refused: %d bytes counted, want %d", got, want)
			}
			for _, d := range []*Delta{send, recv} {
				if err := d.RestoreStreams(nil); err != nil {
					t.Fatal(err)
				}
			}
			if got := held() - start; got != 0 {
				t.Fatalf("with no streams left %d bytes are counted", got)
			}
		})
	}
}

// Malformed messages are errors and leave the reconstruction as it was.
func TestDeltaDecodeRejects(t *testing.T) {
	const rows, width = 10, 8
	send, recv := newDelta(t, "delta:4"), newDelta(t, "delta:4")
	x := newDrift(rows, width, 1, 7).next()
	msg := send.Encode(nil, x, rows, width, 1, Key{})
	out := make([]float32, rows*width)
	if err := recv.Decode(out, rows, width, 1, Key{}, msg); err != nil {
		t.Fatal(err)
	}
	before, _ := recv.StreamState()
	tail := append([]byte(nil), msg...)
	tail[1] |= 0x80 // a row past the tenth
	for _, bad := range [][]byte{nil, msg[:len(msg)-1], append(msg[:len(msg):len(msg)], 0), tail} {
		if err := recv.Decode(out, rows, width, 1, Key{Step: 1}, bad); err == nil {
			t.Fatalf("a message of %d bytes was accepted", len(bad))
		}
	}
	if after, _ := recv.StreamState(); !bytes.Equal(before, after) {
		t.Fatal("a rejected message changed the state")
	}
}

func TestParseDelta(t *testing.T) {
	for _, tc := range []struct{ spec, name string }{
		{"delta", "delta:4:0:0:delta"},
		{"delta:2", "delta:2:0:0:delta"},
		{"delta:8:0.05", "delta:8:0.05:0:delta"},
		{"delta:32:0:3", "delta:32:0:3:delta"},
		{"delta:1:0.5:10:none", "delta:1:0.5:10:none"},
		{"delta:4:0.1:8:delta", "delta:4:0.1:8:delta"},
		{"delta:r:0:0:quant4", "delta:r:0:0:quant4"},
	} {
		c, err := New(tc.spec)
		if err != nil || c.Name() != tc.name {
			t.Errorf("New(%q) = %v, %v; want %s", tc.spec, c, err, tc.name)
		}
	}
	for _, bad := range []string{"delta:3", "delta:x", "delta:4:-1", "delta:4:NaN", "delta:4:Inf", "delta:4:0:-2",
		"delta:4:0:1.5", "delta:4:0:0:zip", "delta:4:0:0:delta:2", "delta:4:0:0:quant4:x", "delta:4:0:0:0:0"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	if !strings.Contains(strings.Join(Usage(), " "), DeltaUsage) || !strings.Contains(strings.Join(Names(), " "), "delta") {
		t.Errorf("Usage() = %v, Names() = %v: want %s and delta", Usage(), Names(), DeltaUsage)
	}
}

// bfloat16 rounding down and up brackets the value.
func TestBF16Bracket(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 10000 {
		f := float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10)))
		lo, hi := fromBF16(bf16Down(f)), fromBF16(bf16Up(f))
		if !(lo <= f && f <= hi) || hi-lo > float32(math.Abs(float64(f)))/64 {
			t.Fatalf("%v: bf16 down %v, up %v", f, lo, hi)
		}
	}
	for _, f := range []float32{0, 1, -1, 0.5} {
		if fromBF16(bf16Down(f)) != f || fromBF16(bf16Up(f)) != f {
			t.Fatalf("%v is a bfloat16 but rounds to %v, %v", f, fromBF16(bf16Down(f)), fromBF16(bf16Up(f)))
		}
	}
}

// delta:r takes its bit width from the schedule's ratio, 32/r rounded down
// to a width it has, and a stream carries on across a change of width:
// the ends still agree, and the message sizes follow the widths.
func TestDeltaBitsFromRatio(t *testing.T) {
	d := newDelta(t, "delta:r")
	for _, tc := range []struct {
		ratio float64
		bits  int
	}{{1, 32}, {1.9, 32}, {2, 8}, {4, 8}, {5, 4}, {8, 4}, {16, 2}, {20, 1}, {32, 1}, {128, 1}} {
		if got := d.BitsAt(tc.ratio); got != tc.bits {
			t.Errorf("BitsAt(%v) = %d, want %d", tc.ratio, got, tc.bits)
		}
	}
	const rows, width = 6, 32
	send, recv := newDelta(t, "delta:r"), newDelta(t, "delta:r")
	src := newDrift(rows, width, 0.05, 8)
	out := make([]float32, rows*width)
	for step, ratio := range []float64{16, 16, 8, 8, 4, 4, 1} {
		key := Key{Step: step}
		x := src.next()
		msg := send.Encode(nil, x, rows, width, ratio, key)
		if want := 1 + rows*rowBytes(send.BitsAt(ratio), width); len(msg) != want {
			t.Fatalf("step %d, ratio %v: %d bytes, want %d", step, ratio, len(msg), want)
		}
		if err := recv.Decode(out, rows, width, ratio, key, msg); err != nil {
			t.Fatal(err)
		}
		if ratio == 1 && !slices.Equal(out, x) {
			t.Fatal("at ratio 1 (32 bits) the rows are not exact")
		}
	}
}

// quantr sends each message as the quantiser of the ratio's bit width, or
// whole below ratio 2.
func TestQuantRatioFollowsTheSchedule(t *testing.T) {
	c, _ := New("quantr")
	x := newDrift(5, 40, 1, 10).next()
	key := Key{Step: 3, Layer: 1}
	for _, tc := range []struct {
		ratio float64
		codec string
	}{{1, "none"}, {2, "quant8"}, {4, "quant8"}, {8, "quant4"}, {16, "quant2"}, {64, "quant1"}} {
		q, _ := New(tc.codec)
		if got, want := c.Encode(nil, x, 5, 40, tc.ratio, key), q.Encode(nil, x, 5, 40, tc.ratio, key); !bytes.Equal(got, want) {
			t.Errorf("ratio %v: the message is not %s's", tc.ratio, tc.codec)
		}
	}
	if DefaultSchedule("quantr") != "exp:16:4:1.5" {
		t.Errorf("quantr's default schedule is %s", DefaultSchedule("quantr"))
	}
}
