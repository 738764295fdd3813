package compress

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func randRows(r *rand.Rand, rows, width int) []float32 {
	x := make([]float32, rows*width)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func roundTrip(t *testing.T, c Compressor, x []float32, rows, width int, ratio float64, key Key) ([]float32, int) {
	t.Helper()
	msg := c.Encode(nil, x, rows, width, ratio, key)
	out := make([]float32, rows*width)
	for i := range out {
		out[i] = float32(math.NaN()) // Decode must overwrite everything
	}
	if err := c.Decode(out, rows, width, ratio, key, msg); err != nil {
		t.Fatalf("%s: %v", c.Name(), err)
	}
	return out, len(msg)
}

func TestRoundTripErrorBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows = 9
	for _, width := range []int{1, 7, 64, 129} {
		x := randRows(r, rows, width)
		key := Key{Seed: 3, Step: 4, Layer: 1, From: 0, To: 2}
		for _, name := range Names() {
			c, _ := New(name)
			out, n := roundTrip(t, c, x, rows, width, 4, key)
			for i := range rows {
				row, got := x[i*width:(i+1)*width], out[i*width:(i+1)*width]
				lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
				for _, v := range row {
					lo, hi = min(lo, v), max(hi, v)
				}
				for j := range row {
					d := math.Abs(float64(got[j] - row[j]))
					var bound float64
					switch name {
					case "none":
						bound = 0
					case "bf16":
						bound = math.Abs(float64(row[j])) / 256
					case "delta": // a stream's first message: its rows at 4 bits, rounded to nearest from a bfloat16 minimum rounded down, by a bfloat16 step rounded up
						bound = (float64(hi-lo)+math.Abs(float64(lo))/128)/15/2*(1+1.0/64) + 1e-6
					case "quant8", "quant4", "quant2", "quant1":
						bits := map[string]int{"quant8": 8, "quant4": 4, "quant2": 2, "quant1": 1}[name]
						bound = float64(hi-lo)/float64(int(1)<<bits-1) + 1e-6
					default:
						continue // checked below
					}
					if d > bound {
						t.Fatalf("%s width %d: [%d,%d] = %v, want %v ± %v", name, width, i, j, got[j], row[j], bound)
					}
				}
			}
			if name == "truncate" {
				k := width / 4
				for i := range rows {
					for j := range width {
						want := float32(0)
						if j < k {
							want = x[i*width+j]
						}
						if out[i*width+j] != want {
							t.Fatalf("truncate: [%d,%d] = %v, want %v", i, j, out[i*width+j], want)
						}
					}
				}
				if n != 4*rows*k {
					t.Fatalf("truncate sent %d bytes, want %d", n, 4*rows*k)
				}
			}
		}
	}
}

// Each row keeps its largest entries; the rest are zero. Their columns go
// as a bitmap when that leaves room for more entries than indices would.
func TestTopKKeepsLargestEntries(t *testing.T) {
	x := []float32{0.1, -5, 2, 0, -3, 1, 0.5, 4}
	c, _ := New("topk")
	// 8 values × 4 B = 32 B; ratio 32/18 leaves 18 B: 3 entries with
	// 2-byte indices, or a 1-byte bitmap and 4 values.
	out, n := roundTrip(t, c, x, 1, 8, 32.0/18, Key{})
	want := []float32{0, -5, 2, 0, -3, 0, 0, 4}
	if !slices.Equal(out, want) || n != 17 {
		t.Fatalf("topk at 32/18 = %v in %d bytes, want %v in 17", out, n, want)
	}
	// 64 values at ratio 32 leave 8 B: one indexed entry (a bitmap alone
	// would take them all).
	wide := make([]float32, 64)
	wide[40], wide[3] = -9, 8
	out, n = roundTrip(t, c, wide, 1, 64, 32, Key{})
	want = make([]float32, 64)
	want[40] = -9
	if !slices.Equal(out, want) || n != 6 {
		t.Fatalf("topk at ratio 32 = %v in %d bytes, want only column 40 in 6", out, n)
	}
}

// "the ratio achieved equals the ratio requested within rounding"
func TestAchievedRatioMatchesRequest(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, width = 20, 256
	x := randRows(r, rows, width)
	raw := float64(4 * rows * width)
	for _, name := range []string{"truncate", "subspace", "topk"} {
		c, _ := New(name)
		for _, ratio := range []float64{1, 1.5, 2, 4, 8, 16, 32, 64, 128} {
			_, n := roundTrip(t, c, x, rows, width, ratio, Key{Step: 1})
			if n == 0 {
				continue
			}
			// floor() in the kept count can only raise the ratio, and by less
			// than one kept unit (a column, or an entry with its index).
			// Per row: fixed bytes (top-k's bitmap), then units of 4 bytes
			// (a value) or 6 (top-k's value with its index).
			got := raw / float64(n)
			unit, fixed := 4.0, 0.0
			if name == "topk" {
				if _, format := topKLayout(width, ratio); format == indexed {
					unit = 6
				} else if format == bitmapped {
					fixed = width / 8
				}
			}
			kept := (float64(n)/rows - fixed) / unit
			if got < ratio-1e-9 || (kept < width && raw/(rows*(fixed+unit*(kept+1))) >= ratio) {
				t.Fatalf("%s: requested %v, achieved %v with %v units per row", name, ratio, got, kept)
			}
		}
	}
	for _, name := range []string{"quant8", "quant4", "quant2", "quant1", "bf16", "none"} {
		c, _ := New(name)
		_, n := roundTrip(t, c, x, rows, width, 1, Key{})
		if got, want := raw/float64(n), c.FixedRatio(width); math.Abs(got-want) > 1e-9 {
			t.Fatalf("%s: achieved %v, declared %v", name, got, want)
		}
	}
}

// "random subspace (... rescaled so the estimate is unbiased); stochastic
// quantisation ... (unbiased)": the mean over many messages converges to x.
func TestUnbiasedCompressors(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const rows, width, trials = 3, 16, 20000
	x := randRows(r, rows, width)
	for _, name := range []string{"subspace", "quant4", "quant2", "quant1"} {
		c, _ := New(name)
		mean := make([]float64, rows*width)
		sq := make([]float64, rows*width)
		for s := range trials {
			out, _ := roundTrip(t, c, x, rows, width, 4, Key{Seed: 11, Step: s})
			for i, v := range out {
				mean[i] += float64(v) / trials
				sq[i] += float64(v) * float64(v) / trials
			}
		}
		for i := range mean {
			sd := math.Sqrt(max(sq[i]-mean[i]*mean[i], 0) / trials)
			if math.Abs(mean[i]-float64(x[i])) > 5*sd+1e-6 {
				t.Fatalf("%s: entry %d mean %v, want %v (standard error %v)", name, i, mean[i], x[i], sd)
			}
		}
	}
}

// Column selection ignores the direction, so the gradient message is the
// adjoint of the forward one: <C(x), g> = <x, C(g)> for the same key.
func TestColumnCompressorsAreSelfAdjoint(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const rows, width = 5, 40
	for _, name := range []string{"truncate", "subspace"} {
		c, _ := New(name)
		x, g := randRows(r, rows, width), randRows(r, rows, width)
		fwd := Key{Seed: 1, Step: 7, Layer: 1, From: 2, To: 0}
		bwd := fwd
		bwd.Backward = true
		cx, _ := roundTrip(t, c, x, rows, width, 3, fwd)
		cg, _ := roundTrip(t, c, g, rows, width, 3, bwd)
		var lhs, rhs float64
		for i := range x {
			lhs += float64(cx[i]) * float64(g[i])
			rhs += float64(x[i]) * float64(cg[i])
		}
		if math.Abs(lhs-rhs) > 1e-4*(1+math.Abs(lhs)) {
			t.Fatalf("%s: <C x, g> = %v, <x, C g> = %v", name, lhs, rhs)
		}
	}
}

func TestSenderAndReceiverAgreeWithoutSideInformation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	x := randRows(r, 4, 32)
	key := Key{Seed: 5, Step: 2, Layer: 0, From: 1, To: 3}
	sender, _ := New("subspace")
	receiver, _ := New("subspace") // a separate instance, as on another worker
	msg := sender.Encode(nil, x, 4, 32, 4, key)
	out := make([]float32, len(x))
	if err := receiver.Decode(out, 4, 32, 4, key, msg); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if out[i] != 0 && math.Abs(float64(out[i]-4*x[i])) > 1e-5 {
			t.Fatalf("entry %d: %v, want 0 or %v", i, out[i], 4*x[i])
		}
	}
}

// TestRowCodersEncodeRowByRow checks the RowCoder contract the halo
// exchange relies on to encode a shared row once: a message is its rows'
// encodings, each RowBytes long, whatever the key.
func TestRowCodersEncodeRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, name := range Names() {
		c, _ := New(name)
		rc := c.Caps().Rows
		if rc == nil {
			continue
		}
		for _, width := range []int{1, 7, 64, 300} {
			for _, ratio := range []float64{1, 1.5, 4, 128} {
				const rows = 9
				x := randRows(r, rows, width)
				x[width/2] = float32(math.NaN())
				rb := rc.RowBytes(width, ratio)
				msg := c.Encode(nil, x, rows, width, ratio, Key{Seed: 1, From: 0, To: 1})
				if len(msg) != rows*rb {
					t.Fatalf("%s, width %d, ratio %g: %d bytes, want %d rows × %d", name, width, ratio, len(msg), rows, rb)
				}
				for i := range rows {
					row := c.Encode(nil, x[i*width:(i+1)*width], 1, width, ratio, Key{Seed: 9, Step: i, From: 2, To: 3, Backward: true})
					if string(row) != string(msg[i*rb:(i+1)*rb]) {
						t.Fatalf("%s, width %d, ratio %g: row %d encodes differently alone", name, width, ratio, i)
					}
				}
			}
		}
	}
}

// subspace picks a fresh column subset per message; when it happens to be
// the first columns, the receiver must still scale them (width 4, ratio 2:
// one message in six keeps columns 0 and 1).
func TestSubspaceScalesEverySubset(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	c, _ := New("subspace")
	seen := map[[4]bool]bool{}
	for step := range 200 {
		out, _ := roundTrip(t, c, x, 1, 4, 2, Key{Seed: 1, Step: step})
		var kept [4]bool
		for j, v := range out {
			if v != 0 && v != 2*x[j] {
				t.Fatalf("step %d: column %d decodes to %v, want 0 or %v", step, j, v, 2*x[j])
			}
			kept[j] = v != 0
		}
		seen[kept] = true
	}
	if !seen[[4]bool{true, true, false, false}] {
		t.Fatal("200 messages never kept columns 0 and 1: the test proves nothing")
	}
}

func TestDecodeRejectsWrongSizes(t *testing.T) {
	for _, name := range Names() {
		c, _ := New(name)
		msg := c.Encode(nil, make([]float32, 32), 2, 16, 4, Key{})
		out := make([]float32, 32)
		if err := c.Decode(out, 2, 16, 4, Key{}, append(msg, 0)); err == nil {
			t.Errorf("%s accepted a message one byte too long", name)
		}
		if len(msg) > 0 {
			if err := c.Decode(out, 2, 16, 4, Key{}, msg[:len(msg)-1]); err == nil {
				t.Errorf("%s accepted a truncated message", name)
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(uint8(0), uint8(2), uint8(8), 2.0, []byte{1, 2, 3})
	f.Add(uint8(8), uint8(1), uint8(3), 1.5, []byte{0, 0, 0, 0, 0xff, 0xff})
	f.Add(uint8(2), uint8(1), uint8(4), math.NaN(), []byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, which, rows, width uint8, ratio float64, msg []byte) {
		c, _ := New(Names()[int(which)%len(Names())])
		out := make([]float32, int(rows)*int(width))
		_ = c.Decode(out, int(rows), int(width), ratio, Key{}, msg) // must not panic
	})
}

// A GradCoder's backward pass reads a peer's bytes too: whatever the
// forward and gradient messages hold, Columns and DecodeGrad return errors
// rather than panic (DecodeGrad checks the columns itself, though the
// exchange only takes columns of a message Decode accepted).
func FuzzDecodeGrad(f *testing.F) {
	f.Add(uint8(2), uint8(16), 3.0, []byte{0xff, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, []byte{1, 2, 3, 4})
	f.Add(uint8(1), uint8(64), 16.0, []byte{3, 0, 0, 0, 0x80, 0x3f}, []byte{0, 0, 0x80, 0x3f})
	f.Add(uint8(3), uint8(5), 1.0, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, rows, width uint8, ratio float64, fwd, grad []byte) {
		for _, name := range Names() {
			c, _ := New(name)
			gc := c.Caps().Grad
			if gc == nil {
				continue
			}
			cols, err := gc.Columns(nil, fwd, int(rows), int(width), ratio)
			if err != nil {
				continue
			}
			out := make([]float32, int(rows)*int(width))
			_ = gc.DecodeGrad(out, int(rows), int(width), ratio, cols, grad) // must not panic
		}
	})
}

func TestVARCOLinearSchedule(t *testing.T) {
	// The authors' parameters: 128 → 1.5, slope 5, 300 iterations, so the
	// floor is reached around iteration 60.
	s, err := ParseSchedule("linear:128:1.5:5", 300)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ratio(0) != 128 {
		t.Fatalf("r_0 = %v", s.Ratio(0))
	}
	if s.Ratio(59) <= 1.5 || s.Ratio(60) != 1.5 || s.Ratio(299) != 1.5 {
		t.Fatalf("r_59 = %v, r_60 = %v, r_299 = %v", s.Ratio(59), s.Ratio(60), s.Ratio(299))
	}
	for t0 := 1; t0 < 300; t0++ {
		if s.Ratio(t0) > s.Ratio(t0-1) {
			t.Fatalf("not monotone at %d", t0)
		}
	}
}

func TestSchedules(t *testing.T) {
	cases := []struct {
		spec string
		at   map[int]float64
	}{
		{"fixed:8", map[int]float64{0: 8, 100: 8}},
		{"step:64:2:10", map[int]float64{0: 64, 9: 64, 10: 32, 49: 4, 100: 2}},
		{"step:81:1:5:3", map[int]float64{0: 81, 5: 27, 10: 9}},
		{"exp:128:1", map[int]float64{0: 128, 100: 1}},
	}
	for _, c := range cases {
		s, err := ParseSchedule(c.spec, 102)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		for step, want := range c.at {
			if got := s.Ratio(step); math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s at %d = %v, want %v", c.spec, step, got, want)
			}
		}
	}
	for _, bad := range []string{"", "fixed", "fixed:0.5", "linear:1:2:5", "linear:128:1", "linear:128:1:-1",
		"step:8:1:0", "adaptive:8:1:2:1", "cubic:3", "fixed:x", "fixed:NaN"} {
		if s, err := ParseSchedule(bad, 100); err == nil || s != nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPlateauLowersRatioWhenLossStalls(t *testing.T) {
	s, err := ParseSchedule("adaptive:16:1:3:2", 100)
	if err != nil {
		t.Fatal(err)
	}
	p := s.(Observer)
	loss := 1.0
	for step := range 3 { // improving: ratio stays
		loss *= 0.9
		p.Observe(step, loss)
	}
	if p.Ratio(3) != 16 {
		t.Fatalf("ratio fell while the loss improved: %v", p.Ratio(3))
	}
	for step := 3; step < 6; step++ { // stalled for 3 steps
		p.Observe(step, loss)
	}
	if p.Ratio(6) != 8 {
		t.Fatalf("ratio after a 3-step plateau = %v, want 8", p.Ratio(6))
	}
	for step := 6; step < 100; step++ {
		p.Observe(step, loss)
	}
	if p.Ratio(100) != 1 {
		t.Fatalf("ratio did not reach its floor: %v", p.Ratio(100))
	}
}

// The small-k selection agrees with quickselect, ties and NaN magnitudes
// (−1) included.
func TestKthLargestSmallMatchesQuickselect(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var best []float32
	for trial := range 2000 {
		n := 1 + r.IntN(80)
		a := make([]float32, n)
		for i := range a {
			a[i] = float32(r.IntN(6 + trial%40)) // many ties
			if r.IntN(10) == 0 {
				a[i] = -1
			}
		}
		k := 1 + r.IntN(n)
		want := kthLargest(append([]float32(nil), a...), k)
		if got := kthLargestSmall(a, k, &best); got != want {
			t.Fatalf("%v, k=%d: %v, quickselect %v", a, k, got, want)
		}
	}
}

// A checkpoint keeps a plateau schedule's whole state: a schedule restored
// mid-way continues exactly as the original, in the middle of a stall and
// before its floor.
func TestPlateauRestoreContinuesIdentically(t *testing.T) {
	losses := []float64{5, 4, 4, 4, 3.9, 3.9, 3.9, 3.9, 3.8, 3.8, 3.8, 3.8, 3.8, 3.7, 3.7, 3.7, 3.7, 3.7, 3.7}
	for cut := 1; cut < len(losses); cut++ {
		a := NewPlateau(64, 1, 3, 2)
		for i, l := range losses[:cut] {
			a.Observe(i, l)
		}
		b := NewPlateau(64, 1, 3, 2)
		st, err := a.State()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Restore(st); err != nil {
			t.Fatal(err)
		}
		for i, l := range losses[cut:] {
			a.Observe(cut+i, l)
			b.Observe(cut+i, l)
			if a.Ratio(cut+i) != b.Ratio(cut+i) {
				t.Fatalf("restored after %d steps: ratio %v at step %d, want %v", cut, b.Ratio(cut+i), cut+i, a.Ratio(cut+i))
			}
		}
		if cut == len(losses)/2 && (a.Ratio(0) == 64 || a.Ratio(0) == 1) {
			t.Fatalf("ratio %v at the end: the losses never moved the schedule, or moved it to its floor", a.Ratio(0))
		}
	}
}

// A schedule flag either fails to parse or gives ratios of at least 1 (and
// not NaN) at every step, however the loss it observes behaves; and its
// String parses back to the same schedule.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"fixed:8", "linear:128:1.5:5", "exp:128:1:5", "step:64:2:10", "step:81:1:5:3", "adaptive", "adaptive:128:1:5:2", "linear:1e308:1:1e308", "linear:2:2:1e308", "exp:2:2:1e308", "step:2:1:9e18"} {
		f.Add(s, uint16(100))
	}
	f.Fuzz(func(t *testing.T, spec string, steps uint16) {
		s, err := ParseSchedule(spec, int(steps))
		if err != nil {
			return
		}
		obs, _ := s.(Observer)
		for step := range int(steps) + 3 {
			if r := s.Ratio(step); !(r >= 1) {
				t.Fatalf("%q: ratio %v at step %d", spec, r, step)
			}
			if obs != nil {
				obs.Observe(step, []float64{1, math.NaN(), 0.5, math.Inf(1), 2}[step%5])
			}
		}
		again, err := ParseSchedule(s.String(), int(steps))
		if err != nil {
			t.Fatalf("%q prints as %q, which does not parse: %v", spec, s.String(), err)
		}
		if obs != nil {
			return // a fresh copy has not seen the losses
		}
		for step := range int(steps) + 3 {
			if a, b := s.Ratio(step), again.Ratio(step); a != b {
				t.Fatalf("%q prints as %q, whose ratio at step %d is %v, not %v", spec, s.String(), step, b, a)
			}
		}
	})
}

// Every codec's messages go row by row, as the Compressor contract says and
// the exchange relies on when it decodes a gradient message in pieces: each
// row's encoding has one size, and decoding a message's rows [a, b) from
// its bytes [a·len/n, b·len/n) gives the rows the whole message decodes to;
// so do a GradCoder's gradient messages and columns.
func TestMessagesGoRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const rows = 9
	for _, name := range Names() {
		if c, _ := New(name); c.Caps().Streaming != nil || c.Caps().Whole {
			continue // a streaming or entropy-coded codec's messages go whole (its own tests check them)
		}
		for _, width := range []int{1, 7, 64, 130} {
			for _, ratio := range []float64{1, 1.5, 3, 16} {
				c, _ := New(name)
				x := randRows(r, rows, width)
				key := Key{Seed: 5, Step: width, Layer: 1, From: 2, To: 0, Backward: true}
				msg := c.Encode(nil, x, rows, width, ratio, key)
				if len(msg)%rows != 0 {
					t.Fatalf("%s width %d ratio %v: %d bytes for %d rows", name, width, ratio, len(msg), rows)
				}
				whole := make([]float32, rows*width)
				if err := c.Decode(whole, rows, width, ratio, key, msg); err != nil {
					t.Fatal(err)
				}
				rb := len(msg) / rows
				gc := c.Caps().Grad
				var grad, cols []byte
				wholeGrad := make([]float32, rows*width)
				if gc != nil {
					var err error
					if cols, err = gc.Columns(nil, msg, rows, width, ratio); err != nil {
						t.Fatal(err)
					}
					grad = gc.EncodeGrad(nil, randRows(r, rows, width), rows, width, ratio, cols)
					if err := gc.DecodeGrad(wholeGrad, rows, width, ratio, cols, grad); err != nil {
						t.Fatal(err)
					}
				}
				byRow := c.Caps().RowByRow
				if !byRow && !strings.HasPrefix(name, "quant") { // only their random numbers run on
					t.Fatalf("%s does not encode row by row", name)
				}
				for _, cut := range [][2]int{{0, 4}, {4, 5}, {5, 9}} {
					a, b := cut[0], cut[1]
					// Pieces of a row-by-row codec's message encode to its bytes.
					if byRow && string(c.Encode(nil, x[a*width:b*width], b-a, width, ratio, key)) != string(msg[a*rb:b*rb]) {
						t.Fatalf("%s width %d ratio %v rows [%d, %d): encoded alone, not the message's bytes", name, width, ratio, a, b)
					}
					piece := make([]float32, (b-a)*width)
					if err := c.Decode(piece, b-a, width, ratio, key, msg[a*rb:b*rb]); err != nil {
						t.Fatalf("%s width %d ratio %v rows [%d, %d): %v", name, width, ratio, a, b, err)
					}
					for j, v := range piece {
						if math.Float32bits(v) != math.Float32bits(whole[a*width+j]) {
							t.Fatalf("%s width %d ratio %v rows [%d, %d): value %d is %v, whole message %v", name, width, ratio, a, b, j, v, whole[a*width+j])
						}
					}
					if gc == nil {
						continue
					}
					gb, cb := len(grad)/rows, len(cols)/rows
					if len(cols)%rows != 0 {
						t.Fatalf("%s width %d ratio %v: %d bytes of columns for %d rows", name, width, ratio, len(cols), rows)
					}
					pieceCols, err := gc.Columns(nil, msg[a*rb:b*rb], b-a, width, ratio)
					if err != nil || string(pieceCols) != string(cols[a*cb:b*cb]) {
						t.Fatalf("%s width %d ratio %v rows [%d, %d): the piece's columns differ from the whole message's (%v)", name, width, ratio, a, b, err)
					}
					if err := gc.DecodeGrad(piece, b-a, width, ratio, cols[a*cb:b*cb], grad[a*gb:b*gb]); err != nil {
						t.Fatalf("%s width %d ratio %v gradient rows [%d, %d): %v", name, width, ratio, a, b, err)
					}
					for j, v := range piece {
						if math.Float32bits(v) != math.Float32bits(wholeGrad[a*width+j]) {
							t.Fatalf("%s width %d ratio %v gradient rows [%d, %d): value %d is %v, whole message %v", name, width, ratio, a, b, j, v, wholeGrad[a*width+j])
						}
					}
				}
			}
		}
	}
}

// A codec whose Caps say Lossless gives back every value bit for bit at
// any ratio (NaNs, infinities, −0 and subnormals included), and the codecs
// that round do not say so.
func TestLosslessCodecsGiveBackEveryBit(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	specs := append(Names(), "entropy", "entropy:none", "entropy:quant8")
	for _, spec := range specs {
		c, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := spec == "none" || spec == "entropy" || spec == "entropy:none"
		if c.Caps().Lossless != want {
			t.Errorf("%s: Caps().Lossless %v, want %v", spec, c.Caps().Lossless, want)
		}
		if !want {
			continue
		}
		for _, width := range []int{1, 7, 64} {
			for _, ratio := range []float64{1, 2, 16} {
				const rows = 9
				x := randRows(r, rows, width)
				special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32}
				for i, v := range special {
					x[(i*5)%len(x)] = v
				}
				out := make([]float32, rows*width)
				if err := c.Decode(out, rows, width, ratio, Key{}, c.Encode(nil, x, rows, width, ratio, Key{})); err != nil {
					t.Fatalf("%s: %v", spec, err)
				}
				for i := range x {
					if math.Float32bits(out[i]) != math.Float32bits(x[i]) {
						t.Fatalf("%s width %d ratio %v: value %d came back %v, sent %v", spec, width, ratio, i, out[i], x[i])
					}
				}
			}
		}
	}
}
