package compress

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// entropyPayloads are messages the stage must carry bit for bit: empty,
// tiny, incompressible, one byte repeated, skewed, runs of zeros, and
// sizes at and around the huff0 block.
func entropyPayloads() map[string][]byte {
	r := rand.New(rand.NewPCG(5, 8))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	skewed := func(n int) []byte { // geometric: about 2 bits of entropy a byte
		b := make([]byte, n)
		for i := range b {
			for r.Float64() < 0.5 && b[i] < 255 {
				b[i]++
			}
		}
		return b
	}
	runs := make([]byte, 0, 300_000) // zero runs between random bytes
	for len(runs) < 300_000 {
		runs = append(runs, make([]byte, r.IntN(400))...)
		runs = append(runs, random(1+r.IntN(8))...)
	}
	return map[string][]byte{
		"empty":              nil,
		"one byte":           {7},
		"two bytes":          {0, 0},
		"tiny":               {1, 2, 3, 1, 2},
		"random":             random(100),
		"random 1 MiB":       random(1 << 20),
		"zeros":              make([]byte, 300_000),
		"skewed":             skewed(5000),
		"skewed block":       skewed(huffBlock),
		"skewed block+1":     skewed(huffBlock + 1),
		"skewed 3 blocks":    skewed(3*huffBlock - 5),
		"zero runs":          runs,
		"skewed then random": append(skewed(huffBlock), random(huffBlock+17)...),
	}
}

func noLayout(int) rowLayout { return rowLayout{} }

func TestEntropyPackRoundTrip(t *testing.T) {
	var e Entropy
	for name, p := range entropyPayloads() {
		c := e.pack(nil, p, rowLayout{})
		if len(c) > len(p)+1 {
			t.Errorf("%s: %d bytes packed to %d, more than one byte more", name, len(p), len(c))
		}
		got, err := e.unpack([]byte("prefix"), c, len(p), noLayout)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, append([]byte("prefix"), p...)) {
			t.Fatalf("%s: %d bytes came back different", name, len(p))
		}
		if len(p) > 0 {
			if _, err := e.unpack(nil, c, len(p)-1, noLayout); err == nil {
				t.Errorf("%s: unpacked to more than the limit it was given", name)
			}
		}
	}
	// Each coding is used where it pays: raw for random bytes, huff0 for
	// skewed ones, zstd for runs.
	p := entropyPayloads()
	for name, mode := range map[string]byte{"random 1 MiB": entropyRaw, "tiny": entropyRaw, "skewed 3 blocks": entropyHuff, "zero runs": entropyZstd} {
		if c := e.pack(nil, p[name], rowLayout{}); c[0] != mode {
			t.Errorf("%s coded as %d, want %d", name, c[0], mode)
		}
	}
	if c := e.pack(nil, p["skewed 3 blocks"], rowLayout{}); len(c) > len(p["skewed 3 blocks"])*2/5 {
		t.Errorf("skewed bytes of about 2 bits of entropy packed to %d of %d bytes", len(c), len(p["skewed 3 blocks"]))
	}
	if c := e.pack(nil, p["zeros"], rowLayout{}); len(c) > 32 {
		t.Errorf("%d zeros packed to %d bytes", len(p["zeros"]), len(c))
	}
}

// A corrupt coded message is an error, never a panic: every truncation, a
// byte too many, and every single-byte change (which may still decode).
func TestEntropyRejectsCorruptMessages(t *testing.T) {
	var e Entropy
	for name, p := range entropyPayloads() {
		if len(p) > 1<<18 {
			continue
		}
		c := e.pack(nil, p, rowLayout{})
		if len(c) == 0 || c[0] == entropyRaw {
			continue // raw bytes carry no length: the wrapped codec checks it
		}
		for n := 0; n < len(c); n += 1 + len(c)/200 {
			if _, err := e.unpack(nil, c[:n], len(p), noLayout); err == nil && n > 0 {
				t.Errorf("%s: accepted the first %d of %d bytes", name, n, len(c))
			}
		}
		if _, err := e.unpack(nil, append(c[:len(c):len(c)], 0), len(p)+1, noLayout); err == nil {
			t.Errorf("%s: accepted a byte too many", name)
		}
		for i := 0; i < len(c); i += 1 + len(c)/100 {
			bad := bytes.Clone(c)
			bad[i] ^= 0x5a
			_, _ = e.unpack(nil, bad, len(p), noLayout) // must not panic
		}
	}
}

// reluRows are activations as a hidden layer sends them: ReLU outputs,
// zero at about half the values.
func reluRows(r *rand.Rand, rows, width int, shift float64) []float32 {
	x := make([]float32, rows*width)
	for i := range x {
		x[i] = float32(max(0, r.NormFloat64()+shift))
	}
	return x
}

// entropy:CODEC decodes what CODEC decodes, bit for bit, message after
// message (a streaming codec's state moves on alike), and its messages are
// never more than a byte longer.
func TestEntropyDecodesAsTheCodecItWraps(t *testing.T) {
	const rows, width = 300, 32
	for _, inner := range []string{"none", "bf16", "quant8", "quant4", "quant2", "quant1", "quantr", "truncate", "subspace", "delta", "delta:2:0:0", "delta:4:0.1:3", "delta:2:0:0:quant4", "delta:32:0:0"} {
		plain, err := New(inner)
		if err != nil {
			t.Fatal(err)
		}
		wrapped, err := New("entropy:" + inner)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 9))
		var plainBytes, wrappedBytes int
		for step := range 6 {
			x := reluRows(r, rows, width, 0.1*float64(step))
			clear(x[:rows*width/3]) // a third of the rows all zero, as gradients away from training nodes
			for _, backward := range []bool{false, true} {
				key := Key{Seed: 2, Step: step, Layer: 1, From: 0, To: 1, Backward: backward}
				ratio := []float64{1, 4, 16}[step%3]
				pm := plain.Encode(nil, x, rows, width, ratio, key)
				wm := wrapped.Encode(nil, x, rows, width, ratio, key)
				plainBytes, wrappedBytes = plainBytes+len(pm), wrappedBytes+len(wm)
				if len(wm) > len(pm)+1 {
					t.Fatalf("%s: %d bytes wrapped to %d", inner, len(pm), len(wm))
				}
				po, wo := make([]float32, rows*width), make([]float32, rows*width)
				if err := plain.Decode(po, rows, width, ratio, key, pm); err != nil {
					t.Fatal(err)
				}
				if err := wrapped.Decode(wo, rows, width, ratio, key, wm); err != nil {
					t.Fatalf("entropy:%s: %v", inner, err)
				}
				for i := range po {
					if math.Float32bits(po[i]) != math.Float32bits(wo[i]) {
						t.Fatalf("entropy:%s, step %d: value %d decodes to %v, %s's to %v", inner, step, i, wo[i], inner, po[i])
					}
				}
			}
		}
		if wrappedBytes >= plainBytes {
			t.Errorf("entropy:%s sent %d bytes, %s %d: a third of the rows are zeros", inner, wrappedBytes, inner, plainBytes)
		}
	}
}

// A quantiser's rows are split into the streams of their header bytes and
// their codes (rowLayout), which join back to the message, and which code
// smaller than the message whole: the headers' exponent bytes are nearly
// constant, their mantissas nearly random.
func TestEntropySplitsRowHeaders(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	for _, tc := range []struct {
		inner                    string
		ratio                    float64
		backward                 bool
		prefix, rowBytes, header int
	}{
		{"quant4", 1, false, 0, 8 + 16, 8},
		{"quant8", 1, true, 0, 8 + 32, 8},
		{"quantr", 8, false, 0, 8 + 16, 8},
		{"delta:2:0:0", 1, false, 38, 4 + 8, 4},
		{"delta:4:0.1:0", 1, false, 38, 4 + 16, 4},
		{"delta:2:0:0:quant8", 1, true, 0, 8 + 32, 8},
		{"delta:2:0:0:none", 1, true, 0, 0, 0},
		{"delta:32", 1, false, 0, 0, 0},
		{"quantr", 1, false, 0, 0, 0},
		{"none", 1, false, 0, 0, 0},
	} {
		const rows, width = 300, 32
		c, _ := New("entropy:" + tc.inner)
		e := c.(*Entropy)
		x := reluRows(r, rows, width, 0)
		key := Key{Seed: 1, To: 1, Backward: tc.backward}
		msg := e.Inner.Encode(nil, x, rows, width, tc.ratio, key)
		l := e.layout(len(msg), rows, width, tc.ratio, key)
		if l != (rowLayout{tc.prefix, tc.rowBytes, tc.header}) {
			t.Errorf("%s: layout %+v, want %d, %d, %d", tc.inner, l, tc.prefix, tc.rowBytes, tc.header)
		}
		if e.layout(len(msg)+1, rows, width, tc.ratio, key) != (rowLayout{}) {
			t.Errorf("%s: a layout for a message a byte longer", tc.inner)
		}
		s := l.split(nil, msg)
		back := make([]byte, len(msg))
		l.join(back, s)
		if !bytes.Equal(back, msg) {
			t.Fatalf("%s: split and joined, the message changed", tc.inner)
		}
		if l.rowBytes == 0 {
			continue
		}
		split, whole := len(e.pack(nil, s, l)), len(e.pack(nil, msg, rowLayout{}))
		if split >= whole {
			t.Errorf("%s: %d bytes coded in streams, %d whole", tc.inner, split, whole)
		}
		t.Logf("%s: %d bytes, coded whole %d, in streams %d", tc.inner, len(msg), whole, split)
	}
}

func TestEntropySpecs(t *testing.T) {
	for spec, want := range map[string]string{
		"entropy":             "entropy:none",
		"entropy:quant4":      "entropy:quant4",
		"entropy:delta:2:0:0": "entropy:delta:2:0:0:delta",
		"entropy:delta:r":     "entropy:delta:r:0:0:delta",
	} {
		c, err := New(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if c.Name() != want {
			t.Errorf("%s is named %s, want %s", spec, c.Name(), want)
		}
		again, err := New(c.Name())
		if err != nil || again.Name() != c.Name() {
			t.Errorf("%s: its name %s does not make it again (%v)", spec, c.Name(), err)
		}
		if !c.Caps().Whole || c.Caps().Rows != nil || c.Caps().Grad != nil || c.Caps().RowByRow {
			t.Errorf("%s: caps %+v, want whole messages only", spec, c.Caps())
		}
		if (c.Caps().Streaming != nil) != (spec != "entropy" && spec != "entropy:quant4") {
			t.Errorf("%s: streaming %v", spec, c.Caps().Streaming != nil)
		}
	}
	for _, bad := range []string{"entropy:", "entropy:entropy", "entropy:entropy:quant4", "entropy:topk", "entropy:quant3", "entropy:delta:3"} {
		if _, err := New(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// Whatever a peer sends, an entropy-coded codec's Decode returns an error
// rather than panic, and the stage carries any message bit for bit.
func FuzzEntropy(f *testing.F) {
	var e Entropy
	for _, p := range entropyPayloads() {
		if len(p) < 1<<12 {
			f.Add(uint8(2), uint8(3), uint8(8), p, e.pack(nil, p, rowLayout{}))
		}
	}
	c, _ := New("entropy:quant4")
	f.Add(uint8(1), uint8(4), uint8(16), []byte{}, c.Encode(nil, reluRows(rand.New(rand.NewPCG(1, 1)), 4, 16, 0), 4, 16, 1, Key{}))
	inners := []string{"quant4", "quant8", "delta:2:0:0", "none"}
	f.Fuzz(func(t *testing.T, which, rows, width uint8, msg, coded []byte) {
		c, _ := New("entropy:" + inners[int(which)%len(inners)])
		out := make([]float32, int(rows)*int(width))
		_ = c.Decode(out, int(rows), int(width), 1, Key{}, coded) // must not panic
		var e Entropy
		l := rowLayout{int(rows) % 5, int(width)%40 + 2, 1 + int(which)%(int(width)%40+1)}
		if (len(msg)-l.prefix)%l.rowBytes != 0 || len(msg) < l.prefix {
			l = rowLayout{}
		}
		got, err := e.unpack(nil, e.pack(nil, l.split(nil, msg), l), len(msg), func(int) rowLayout { return l })
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes came back as %d (%v), layout %+v", len(msg), len(got), err, l)
		}
	})
}

// The entropy stage alone, on messages shaped as the halo exchange's on
// Amazon Computers (SAGE-32, 4 parts: about 3,000 rows a message): hidden
// activations (ReLU, zero at about half the values) and gradients, a third
// of whose rows are zero (the loss's gradient vanishes away from the
// training nodes). MB/s are of the wrapped codec's message; "ratio" is the
// coded size over it. wrapped-encode is the codec's own encode of the same
// rows, against which the stage's time is added.
func BenchmarkEntropy(b *testing.B) {
	const rows, width = 3000, 32
	r := rand.New(rand.NewPCG(4, 4))
	act := reluRows(r, rows, width, 0)
	grad := randRows(r, rows, width)
	clear(grad[:rows*width/3])
	for _, inner := range []string{"quant8", "quant4", "delta:2:0:0"} {
		for name, x := range map[string][]float32{"activations": act, "gradients": grad} {
			c, _ := New(inner)
			msg := c.Encode(nil, x, rows, width, 1, Key{Seed: 1, From: 0, To: 1})
			e := Entropy{Inner: c}
			l := e.layout(len(msg), rows, width, 1, Key{})
			split := l.split(nil, msg)
			coded := e.pack(nil, split, l)
			layout := func(int) rowLayout { return l }
			ratio := float64(len(coded)) / float64(len(msg))
			b.Run(fmt.Sprintf("%s/%s/wrapped-encode", inner, name), func(b *testing.B) {
				b.SetBytes(int64(len(msg)))
				var buf []byte
				for i := range b.N {
					b.StopTimer()
					d, _ := New(inner) // delta's first message of a stream, every time
					b.StartTimer()
					buf = d.Encode(buf[:0], x, rows, width, 1, Key{Seed: 1, Step: i})
				}
			})
			b.Run(fmt.Sprintf("%s/%s/encode", inner, name), func(b *testing.B) {
				b.SetBytes(int64(len(msg)))
				b.ReportMetric(ratio, "ratio")
				var buf []byte
				for range b.N {
					buf = e.pack(buf[:0], l.split(split[:0], msg), l)
				}
			})
			b.Run(fmt.Sprintf("%s/%s/decode", inner, name), func(b *testing.B) {
				b.SetBytes(int64(len(msg)))
				var buf []byte
				for range b.N {
					var err error
					if buf, err = e.unpack(buf[:0], coded, len(msg), layout); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// split and join lay out the streams as the plain loops of commit b1b2f45
// did (header bytes of every row in turn, then the codes), so that coded
// messages stay the same bytes.
func TestEntropySplitMatchesPlainLoops(t *testing.T) {
	plainSplit := func(l rowLayout, dst, msg []byte) []byte {
		rows := msg[l.prefix:]
		dst = append(dst, msg[:l.prefix]...)
		for j := range l.header {
			for r := j; r < len(rows); r += l.rowBytes {
				dst = append(dst, rows[r])
			}
		}
		for r := 0; r < len(rows); r += l.rowBytes {
			dst = append(dst, rows[r+l.header:r+l.rowBytes]...)
		}
		return dst
	}
	r := rand.New(rand.NewPCG(21, 4))
	for range 300 {
		l := rowLayout{prefix: r.IntN(20), header: []int{4, 8, 1, 3}[r.IntN(4)]}
		l.rowBytes = l.header + 1 + r.IntN(40)
		msg := make([]byte, l.prefix+r.IntN(50)*l.rowBytes)
		for i := range msg {
			msg[i] = byte(r.Uint32())
		}
		lead := []byte{7, 7}
		want := plainSplit(l, slices.Clone(lead), msg)
		got := l.split(slices.Clone(lead), msg)
		if !bytes.Equal(got, want) {
			t.Fatalf("layout %+v: split\n%x\nplain\n%x", l, got, want)
		}
		back := make([]byte, len(msg))
		l.join(back, got[len(lead):])
		if !bytes.Equal(back, msg) {
			t.Fatalf("layout %+v: split and joined, the message changed", l)
		}
	}
}
