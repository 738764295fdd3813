package compress

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// piecesOf is the Pieced of codec c, failing the test if it has none.
func piecesOf(t *testing.T, c Compressor) Pieced {
	t.Helper()
	p := c.Caps().Pieces
	if p == nil {
		t.Fatalf("%s does not go in pieces", c.Name())
	}
	return p
}

// encodeInPieces is p's EncodePieces of x's rows, checking that fill is
// asked for every row once, in order, in pieces of at most maxRows rows.
func encodeInPieces(t *testing.T, p Pieced, dst []byte, x []float32, rows, width int, key Key, maxRows int) []byte {
	t.Helper()
	next := 0
	dst = p.EncodePieces(dst, rows, width, 1, key, func(lo, hi int, buf []float32) {
		if lo != next || hi <= lo || hi > rows || hi-lo > maxRows || len(buf) != (hi-lo)*width {
			t.Fatalf("fill(%d, %d) with %d values after row %d, %d rows of %d", lo, hi, len(buf), next, rows, width)
		}
		copy(buf, x[lo*width:hi*width])
		next = hi
	})
	if next != rows {
		t.Fatalf("fill stopped at row %d of %d", next, rows)
	}
	return dst
}

// decodeInPieces is p's DecodePieces into out, with the same checks on put.
func decodeInPieces(t *testing.T, p Pieced, out []float32, rows, width int, key Key, msg []byte, maxRows int) error {
	t.Helper()
	next := 0
	err := p.DecodePieces(rows, width, 1, key, msg, func(lo, hi int, got []float32) {
		if lo != next || hi <= lo || hi > rows || hi-lo > maxRows || len(got) != (hi-lo)*width {
			t.Fatalf("put(%d, %d) with %d values after row %d, %d rows of %d", lo, hi, len(got), next, rows, width)
		}
		copy(out[lo*width:hi*width], got)
		next = hi
	})
	if err == nil && next != rows {
		t.Fatalf("put stopped at row %d of %d", next, rows)
	}
	return err
}

// Delta's messages in pieces are its messages whole: the same bytes, rows
// and stream states at both ends, message after message, over random
// shapes (messages of one piece and of several), bit widths, thresholds,
// staleness bounds, float32 and bfloat16 reconstructions, and with the
// entropy stage around it.
func TestDeltaPiecesMatchWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	trials := 120
	if testing.Short() {
		trials = 30
	}
	for trial := range trials {
		rows, width := 1+r.IntN(700), 1+r.IntN(200)
		if trial%5 == 0 {
			rows = r.IntN(3)
		}
		bits := []int{1, 2, 4, 8, 32}[r.IntN(5)]
		threshold := []float64{0, 0, 0.05}[r.IntN(3)]
		maxStale := []int{0, 0, 2}[r.IntN(3)]
		spec := fmt.Sprintf("delta:%d:%g:%d", bits, threshold, maxStale)
		if trial%3 == 0 {
			spec = "entropy:" + spec
		}
		bf16 := trial%4 == 1
		var ends [4]Compressor // sender and receiver whole, sender and receiver in pieces
		for i := range ends {
			c, err := New(spec)
			if err != nil {
				t.Fatal(err)
			}
			c.Caps().Streaming.SetBF16(bf16)
			ends[i] = c
		}
		src := newDeltaSource(r, rows, width)
		out, pout := make([]float32, rows*width), make([]float32, rows*width)
		key := Key{Layer: 1, From: 2, To: 3, Backward: trial%2 == 0}
		for step := range 5 {
			key.Step = step
			x := src.next(width)
			msg := ends[0].Encode(nil, x, rows, width, 1, key)
			pmsg := encodeInPieces(t, piecesOf(t, ends[2]), nil, x, rows, width, key, blockRows(width))
			if !bytes.Equal(msg, pmsg) {
				t.Fatalf("%s bf16 %v, %d×%d, step %d: message in pieces\n%x\nwhole\n%x", spec, bf16, rows, width, step, pmsg, msg)
			}
			if err := ends[1].Decode(out, rows, width, 1, key, msg); err != nil {
				t.Fatal(err)
			}
			if err := decodeInPieces(t, piecesOf(t, ends[3]), pout, rows, width, key, msg, blockRows(width)); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(float32Bits(out), float32Bits(pout)) {
				t.Fatalf("%s bf16 %v, %d×%d, step %d: rows decoded in pieces differ", spec, bf16, rows, width, step)
			}
			for i := range 2 {
				whole, err := ends[i].Caps().Streaming.StreamState()
				if err != nil {
					t.Fatal(err)
				}
				pieces, err := ends[2+i].Caps().Streaming.StreamState()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(whole, pieces) {
					t.Fatalf("%s bf16 %v, %d×%d, step %d: end %d's state in pieces differs", spec, bf16, rows, width, step, i)
				}
			}
		}
	}
}

// A malformed message decoded in pieces is an error before any row is
// handed over, and leaves the stream as it was.
func TestDeltaPiecesRejectBeforePutting(t *testing.T) {
	for _, spec := range []string{"delta:2:0:0", "entropy:delta:2:0:0", "delta:4:0.1:3"} {
		const rows, width = 300, 70
		send, _ := New(spec)
		recv, _ := New(spec)
		src := newDrift(rows, width, 0.1, 3)
		key := Key{Layer: 0, From: 1, To: 0}
		msg := send.Encode(nil, src.next(), rows, width, 1, key)
		if err := recv.Decode(make([]float32, rows*width), rows, width, 1, key, msg); err != nil {
			t.Fatal(err)
		}
		before, _ := recv.Caps().Streaming.StreamState()
		key.Step = 1
		msg = send.Encode(nil, src.next(), rows, width, 1, key)
		for _, bad := range [][]byte{msg[:len(msg)-1], append(slices.Clone(msg), 0)} {
			err := recv.Caps().Pieces.DecodePieces(rows, width, 1, key, bad, func(lo, hi int, _ []float32) {
				t.Fatalf("%s: put(%d, %d) of a malformed message", spec, lo, hi)
			})
			if err == nil {
				t.Fatalf("%s: a malformed message of %d bytes (want %d) decoded", spec, len(bad), len(msg))
			}
			if after, _ := recv.Caps().Streaming.StreamState(); !bytes.Equal(before, after) {
				t.Fatalf("%s: a malformed message changed the stream", spec)
			}
		}
	}
}

// A delta codec whose gradients go through another codec does not go in
// pieces, and neither does an entropy stage around it.
func TestDeltaWithGradCodecNotInPieces(t *testing.T) {
	for _, spec := range []string{"delta:2:0:0:quant4", "entropy:delta:2:0:0:none", "quant4", "entropy:quant4"} {
		c, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		if c.Caps().Pieces != nil {
			t.Errorf("%s goes in pieces", spec)
		}
	}
	for _, spec := range []string{"delta:2:0:0", "delta:r:0:0:delta", "entropy:delta:2:0:0", Auto} {
		if spec == Auto {
			spec = AutoCodec(false)
		}
		c, _ := New(spec)
		if c.Caps().Pieces == nil {
			t.Errorf("%s does not go in pieces", spec)
		}
	}
}
