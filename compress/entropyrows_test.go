package compress

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// rowsMessage is a message of layout l with k rows of skewed bytes, each
// row all zeros with probability zeroFrac.
func rowsMessage(r *rand.Rand, l rowLayout, k int, zeroFrac float64) []byte {
	msg := make([]byte, l.prefix+k*l.rowBytes)
	for i := range msg[:l.prefix] {
		msg[i] = byte(r.Uint32())
	}
	for i := range k {
		if r.Float64() < zeroFrac {
			continue
		}
		row := msg[l.prefix+i*l.rowBytes : l.prefix+(i+1)*l.rowBytes]
		for j := range row {
			for r.Float64() < 0.6 && row[j] < 255 {
				row[j]++
			}
		}
		row[0] |= 1 // never all zero
	}
	return msg
}

// Messages with a row layout come back bit for bit, with their all-zero
// rows left out where there are enough of them to pay for the bitmap
// (entropySparse) and kept where there are none, at any fraction of them,
// in one huff0 block a stream or several, with any header streams sent as
// they are.
func TestEntropyRowsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2))
	var e Entropy
	for trial := range 300 {
		l := rowLayout{prefix: r.IntN(40), header: 1 + r.IntN(8)}
		l.rowBytes = l.header + 1 + r.IntN(30)
		if trial%2 == 0 { // delta coding's headers, and its rows of up to 16 code bytes
			l.header, l.rowBytes = deltaHeader, deltaHeader+1+r.IntN(18)
		}
		k := r.IntN(400)
		if trial%50 == 0 {
			k = 2*huffBlock/l.rowBytes + r.IntN(1000) // several blocks a stream
		}
		zeroFrac := []float64{0, 0.001, 0.1, 0.5, 0.97, 1}[trial%6]
		msg := rowsMessage(r, l, k, zeroFrac)
		c := e.packRows(nil, msg, l, uint64(r.IntN(1<<l.header))) // some header streams as they are
		got, err := e.unpack(nil, c, len(msg), func(int) rowLayout { return l })
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("layout %+v, %d rows, %v zero: came back as %d of %d bytes (%v)", l, k, zeroFrac, len(got), len(msg), err)
		}
		var zeros int
		for i := range k {
			if allZero(msg[l.prefix+i*l.rowBytes : l.prefix+(i+1)*l.rowBytes]) {
				zeros++
			}
		}
		sparse := zeros*l.rowBytes > (k+7)/8
		if len(c) > 0 && c[0] != entropyRaw && (c[0] == entropySparse) != sparse {
			t.Fatalf("layout %+v, %d rows, %d of them zero: coded as %d", l, k, zeros, c[0])
		}
		if len(c) > len(msg)+1 {
			t.Fatalf("layout %+v: %d bytes coded as %d", l, len(msg), len(c))
		}
	}
}

// A corrupt message of rows left out is an error, never a panic: every
// truncation, a byte too many, a bitmap that marks no row or rows past the
// end, and single-byte changes (which may still decode).
func TestEntropySparseRejectsCorruptMessages(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	l := rowLayout{prefix: 5, rowBytes: 12, header: 4}
	layout := func(int) rowLayout { return l }
	var e Entropy
	for _, k := range []int{13, 300, 3000} {
		msg := rowsMessage(r, l, k, 0.6)
		c := e.packRows(nil, msg, l, 0)
		if c[0] != entropySparse {
			t.Fatalf("%d rows, 60%% of them zero: coded as %d", k, c[0])
		}
		for n := 0; n < len(c); n += 1 + len(c)/200 {
			if _, err := e.unpack(nil, c[:n], len(msg), layout); err == nil && n > 0 {
				t.Errorf("%d rows: accepted the first %d of %d bytes", k, n, len(c))
			}
		}
		if _, err := e.unpack(nil, append(c[:len(c):len(c)], 0), len(msg), layout); err == nil {
			t.Errorf("%d rows: accepted a byte too many", k)
		}
		if _, err := e.unpack(nil, c, len(msg), func(int) rowLayout { return rowLayout{} }); err == nil {
			t.Errorf("%d rows: decoded without a row layout", k)
		}
		for i := 0; i < len(c); i += 1 + len(c)/300 {
			bad := bytes.Clone(c)
			bad[i] ^= 0x5a
			_, _ = e.unpack(nil, bad, len(msg), layout) // must not panic
		}
	}
	// Bitmaps that mark no row, or a row past the end (k = 13: bits 13–15
	// of the second byte are past it), with streams of the sizes they say.
	for _, bm := range [][]byte{{0, 0}, {0xff, 0x20}} {
		const k = 13
		var s []byte
		s = append(s, make([]byte, l.prefix)...)
		s = append(s, bm...)
		zeros := zeroRowsIn(bm, 16)
		s = append(s, make([]byte, (k-min(zeros, k))*l.rowBytes)...)
		segs := l.sparseSegments(nil, k, min(zeros, k))
		n := l.prefix + k*l.rowBytes
		c := e.huffman(nil, entropySparse, n, s, segs, 0)
		if _, err := e.unpack(nil, c, n, layout); err == nil {
			t.Errorf("bitmap %x accepted", bm)
		}
	}
}

// Gradients whose rows are mostly zero (the last layer's, away from the
// training nodes), delta-coded: leaving the zero rows out codes them in
// fewer bytes than Huffman coding every row and than zstd, and the stage
// then decodes them as the codec it wraps.
func TestEntropyLeavesOutZeroRows(t *testing.T) {
	const rows, width = 3000, 10
	r := rand.New(rand.NewPCG(6, 1))
	for _, zeroFrac := range []float64{0.6, 0.9} {
		send, _ := New("entropy:delta:2:0:0")
		recv, _ := New("entropy:delta:2:0:0")
		plain, _ := New("delta:2:0:0")
		plainRecv, _ := New("delta:2:0:0")
		for step := range 3 {
			g := randRows(r, rows, width)
			clear(g[:int(zeroFrac*rows)*width])
			key := Key{Step: step, Backward: true}
			coded := send.Encode(nil, g, rows, width, 1, key)
			msg := plain.Encode(nil, g, rows, width, 1, key)
			l := send.(*Entropy).layout(len(msg), rows, width, 1, key)
			var dense Entropy
			if old := dense.pack(nil, l.split(nil, msg), l); len(coded) >= len(old) || coded[0] != entropySparse {
				t.Errorf("%v zero rows, step %d: %d bytes (mode %d), %d with every row coded (mode %d)", zeroFrac, step, len(coded), coded[0], len(old), old[0])
			}
			out, want := make([]float32, rows*width), make([]float32, rows*width)
			if err := recv.Decode(out, rows, width, 1, key, coded); err != nil {
				t.Fatal(err)
			}
			if err := plainRecv.Decode(want, rows, width, 1, key, msg); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(float32Bits(out), float32Bits(want)) {
				t.Fatalf("%v zero rows, step %d: decoded rows differ from delta:2:0:0's", zeroFrac, step)
			}
		}
	}
}

// Whatever the rows, a message with a row layout comes back bit for bit.
func FuzzEntropyRows(f *testing.F) {
	f.Add(uint8(3), uint8(12), uint8(4), []byte{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, prefix, rowBytes, header uint8, msg []byte) {
		l := rowLayout{int(prefix) % 8, int(rowBytes)%40 + 2, 0}
		l.header = 1 + int(header)%(l.rowBytes-1)
		if len(msg) < l.prefix || (len(msg)-l.prefix)%l.rowBytes != 0 {
			return
		}
		var e Entropy
		got, err := e.unpack(nil, e.packRows(nil, msg, l, uint64(header)), len(msg), func(int) rowLayout { return l })
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes came back as %d (%v), layout %+v", len(msg), len(got), err, l)
		}
	})
}

// Delta coding's headers: the streams of the low bytes of its minima and
// steps go as they are (blockRaw), the others are coded, and the message
// still comes back bit for bit; forward and backward, in both forms.
func TestEntropyDeltaSendsMantissaBytesRaw(t *testing.T) {
	const rows, width = 2000, 32
	r := rand.New(rand.NewPCG(2, 7))
	for _, zeroFrac := range []float64{0, 0.5} {
		for _, backward := range []bool{false, true} {
			c, _ := New("entropy:delta:2:0:0")
			e := c.(*Entropy)
			x := reluRows(r, rows, width, 0)
			clear(x[:int(zeroFrac*rows)*width])
			key := Key{Backward: backward}
			coded := e.Encode(nil, x, rows, width, 1, key)
			msg := e.msg
			l := e.layout(len(msg), rows, width, 1, key)
			// Walk the blocks: one per stream, every stream under a block.
			src := coded[1:]
			_, n := binary.Uvarint(src)
			src = src[n:]
			want := []byte{blockHuff, blockRaw, blockHuff, blockRaw, blockHuff, blockHuff}
			if coded[0] == entropySparse {
				want = append([]byte{blockHuff, blockHuff}, want[1:]...)
			} else if zeroFrac > 0 {
				t.Fatalf("backward %v: half the rows zero, mode %d", backward, coded[0])
			}
			for i, kind := range want {
				if len(src) == 0 || src[0] != kind && !(kind == blockHuff && src[0] == blockRLE) {
					t.Fatalf("zeros %v, backward %v: stream %d block kind %v, want %d", zeroFrac, backward, i, src[:min(1, len(src))], kind)
				}
				var err error
				if _, src, err = e.unhuffBlock(nil, src, blockSize(l, coded[0], msg, i)); err != nil {
					t.Fatal(err)
				}
			}
			if len(src) != 0 {
				t.Fatalf("zeros %v, backward %v: %d bytes after the streams", zeroFrac, backward, len(src))
			}
			got, err := e.unpack(nil, coded, len(msg), func(int) rowLayout { return l })
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("zeros %v, backward %v: came back as %d of %d bytes (%v)", zeroFrac, backward, len(got), len(msg), err)
			}
		}
	}
}

// blockSize is the size of stream i of msg coded in mode (entropyHuff or
// entropySparse), each stream one block.
func blockSize(l rowLayout, mode byte, msg []byte, i int) int {
	k := (len(msg) - l.prefix) / l.rowBytes
	if mode == entropyHuff {
		return l.segments(nil, len(msg))[i]
	}
	var zeros int
	for j := range k {
		if allZero(msg[l.prefix+j*l.rowBytes : l.prefix+(j+1)*l.rowBytes]) {
			zeros++
		}
	}
	return l.sparseSegments(nil, k, zeros)[i]
}
