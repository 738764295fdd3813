package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/memacct"
)

// newDeltaBF16 is newDelta keeping its reconstructions in bfloat16.
func newDeltaBF16(t testing.TB, spec string) *Delta {
	c, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	d := c.(*Delta)
	d.Caps().Streaming.SetBF16(true)
	return d
}

// halfBits is h widened to float32, as bits.
func halfBits(h []uint16) []uint32 {
	b := make([]uint32, len(h))
	for i, v := range h {
		b[i] = uint32(v) << 16
	}
	return b
}

// roundRecon rounds a float32 reconstruction to bfloat16 in place, as a
// codec with BF16 does after each message.
func roundRecon(rec []float32) {
	for i, v := range rec {
		rec[i] = fromBF16(toBF16(v))
	}
}

// deltaBF16Cases are the shapes and specs the bfloat16 state's tests run:
// every bit width, thresholds that skip rows, staleness bounds, and
// messages of several blocks (deltaBlock values), one row per block among
// them.
var deltaBF16Cases = []struct {
	spec        string
	rows, width int
}{
	{"delta:1", 37, 20}, {"delta:2", 37, 20}, {"delta:4", 37, 20}, {"delta:8", 37, 20}, {"delta:32", 37, 20},
	{"delta:2:0.05:4", 37, 20}, {"delta:4:0.2", 37, 20}, {"delta:8:0.01:2", 37, 20}, {"delta:32:0.1:3", 37, 20},
	{"delta:1:0.02:3", 37, 20}, {"delta:2", 300, 130}, {"delta:4:0.05:3", 300, 130}, {"delta:2", 3, 20000},
}

// A codec with BF16 is the float32 codec with its reconstruction rounded
// to bfloat16 after each message: the same messages, and the same state
// (widened) at both ends, bit for bit, at every step, in both directions,
// whatever the bits, threshold and staleness bound; the receiver's rows
// are its reconstruction.
func TestDeltaBF16EndsAgree(t *testing.T) {
	for _, tc := range deltaBF16Cases {
		t.Run(fmt.Sprintf("%s/%dx%d", tc.spec, tc.rows, tc.width), func(t *testing.T) {
			rows, width := tc.rows, tc.width
			send, recv := newDeltaBF16(t, tc.spec), newDeltaBF16(t, tc.spec)
			ref := newDelta(t, tc.spec)
			src := newDrift(rows, width, 0.05, 1)
			out := make([]float32, rows*width)
			for step := range 40 {
				for _, backward := range []bool{false, true} {
					key := Key{Seed: 3, Step: step, Layer: 1, From: 0, To: 2, Backward: backward}
					x := src.next()
					msg := send.Encode(nil, x, rows, width, 1, key)
					want := ref.Encode(nil, x, rows, width, 1, key)
					rs := ref.streams[streamEnd{streamOf(key), false}]
					if !bytes.Equal(msg, want) {
						t.Fatalf("step %d backward %v: the message differs from the rounded float32 codec's", step, backward)
					}
					roundRecon(rs.recon)
					if err := recv.Decode(out, rows, width, 1, key, msg); err != nil {
						t.Fatal(err)
					}
					s := send.streams[streamEnd{streamOf(key), false}]
					r := recv.streams[streamEnd{streamOf(key), true}]
					if !s.bf16 || !r.bf16 {
						t.Fatalf("backward %v: streams in bfloat16: sender %v, receiver %v", backward, s.bf16, r.bf16)
					}
					if !slices.Equal(s.skipped, r.skipped) || !slices.Equal(s.skipped, rs.skipped) {
						t.Fatalf("step %d: skip counts differ", step)
					}
					wantBits := float32Bits(rs.recon)
					if s.bf16 && (!slices.Equal(halfBits(s.half), wantBits) || !slices.Equal(halfBits(r.half), wantBits)) ||
						!s.bf16 && (!slices.Equal(float32Bits(s.recon), wantBits) || !slices.Equal(float32Bits(r.recon), wantBits)) {
						t.Fatalf("step %d backward %v: the ends' reconstructions differ from each other or the reference", step, backward)
					}
					if !slices.Equal(float32Bits(out), wantBits) {
						t.Fatalf("step %d backward %v: the receiver's rows are not its reconstruction", step, backward)
					}
				}
			}
		})
	}
}

// deltaBF16State is a state of both directions' streams at both ends
// after a few messages, from codecs keeping bfloat16 (bf16) or float32
// reconstructions, the codecs and their rows' source.
func deltaBF16State(bf16 bool) ([]byte, *Delta, *Delta, *drift) {
	const rows, width = 11, 24
	c, _ := New("delta:2:0.05:5")
	r, _ := New("delta:2:0.05:5")
	send, recv := c.(*Delta), r.(*Delta)
	send.SetBF16(bf16)
	recv.SetBF16(bf16)
	src := newDrift(rows, width, 0.05, 6)
	out := make([]float32, rows*width)
	for step := range 6 {
		for _, k := range deltaBF16Keys {
			k.Step = step
			if err := recv.Decode(out, rows, width, 1, k, send.Encode(nil, src.next(), rows, width, 1, k)); err != nil {
				panic(err)
			}
		}
	}
	a, _ := send.StreamState()
	b, _ := recv.StreamState()
	// One codec's state of both ends, as a worker sending to itself holds.
	n := binary.LittleEndian.Uint64(a[8:]) + binary.LittleEndian.Uint64(b[8:])
	st := binary.LittleEndian.AppendUint64(slices.Clone(a[:8]), n)
	st = append(append(st, a[16:]...), b[16:]...)
	m, _ := New("delta:2:0.05:5")
	both := m.(*Delta)
	both.SetBF16(bf16)
	if err := both.RestoreStreams(st); err != nil {
		panic(err)
	}
	st, _ = both.StreamState() // in the order of the streams' ids
	both.RestoreStreams(nil)
	return st, send, recv, src
}

var deltaBF16Keys = []Key{{Layer: 0, From: 0, To: 1}, {Layer: 1, From: 1, To: 0, Backward: true}}

// The bfloat16 state round-trips exactly: a restored codec continues as
// the original would have, bit for bit. It has a magic of its own: a
// float32 codec refuses it by name, and a bfloat16 codec given a float32
// state rounds it (both ends round the same values, so they stay equal).
func TestDeltaBF16StateRoundTrip(t *testing.T) {
	const rows, width = 11, 24
	st, send, recv, src := deltaBF16State(true)
	if !strings.HasPrefix(string(st), deltaStateMagicBF16) {
		t.Fatalf("a bfloat16 state starts %q", st[:8])
	}
	a, b := newDeltaBF16(t, "delta:2:0.05:5"), newDeltaBF16(t, "delta:2:0.05:5")
	if err := a.RestoreStreams(st); err != nil {
		t.Fatal(err)
	}
	if err := b.RestoreStreams(st); err != nil {
		t.Fatal(err)
	}
	if again, _ := a.StreamState(); !bytes.Equal(again, st) {
		t.Fatal("the restored codec's state differs")
	}
	out, rout := make([]float32, rows*width), make([]float32, rows*width)
	for step := 6; step < 14; step++ {
		x := src.next()
		for _, k := range deltaBF16Keys {
			k.Step = step
			m, ma := send.Encode(nil, x, rows, width, 1, k), a.Encode(nil, x, rows, width, 1, k)
			if !bytes.Equal(m, ma) {
				t.Fatalf("step %d: the restored codec's message differs", step)
			}
			if err := recv.Decode(out, rows, width, 1, k, m); err != nil {
				t.Fatal(err)
			}
			if err := b.Decode(rout, rows, width, 1, k, m); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(float32Bits(out), float32Bits(rout)) {
				t.Fatalf("step %d: the restored receiver decodes other rows", step)
			}
		}
	}

	fp32 := newDelta(t, "delta:2:0.05:5")
	if err := fp32.RestoreStreams(st); err == nil || !strings.Contains(err.Error(), "bfloat16") {
		t.Fatalf("a float32 codec given a bfloat16 state: %v", err)
	}

	st32, _, _, _ := deltaBF16State(false)
	c := newDeltaBF16(t, "delta:2:0.05:5")
	if err := c.RestoreStreams(st32); err != nil {
		t.Fatalf("a bfloat16 codec given a float32 state: %v", err)
	}
	f := newDelta(t, "delta:2:0.05:5")
	if err := f.RestoreStreams(st32); err != nil {
		t.Fatal(err)
	}
	for id, s := range f.streams {
		h := c.streams[id]
		if h == nil || h.bf16 != c.BF16 || !slices.Equal(h.skipped, s.skipped) {
			t.Fatalf("stream %+v: converted %+v", id, h)
		}
		want := slices.Clone(s.recon)
		if h.bf16 {
			roundRecon(want)
			if !slices.Equal(halfBits(h.half), float32Bits(want)) {
				t.Fatalf("stream %+v: the float32 state was not rounded to nearest", id)
			}
		} else if !slices.Equal(float32Bits(h.recon), float32Bits(want)) {
			t.Fatalf("stream %+v: the float32 state changed", id)
		}
	}
}

// Malformed bfloat16 states are refused and leave the codec as it was:
// truncated or extended, of unknown flags, bfloat16 values in a float32
// state, or a stream's bytes cut to a float32 count.
func TestDeltaBF16StateRejects(t *testing.T) {
	st, _, _, _ := deltaBF16State(true)
	st32, _, _, _ := deltaBF16State(false)
	flags := len(deltaStateMagic) + 8 + 3*8 // the first stream's flags
	set := func(b []byte, at int, v byte) []byte { b = slices.Clone(b); b[at] = v; return b }
	for name, bad := range map[string][]byte{
		"short":                     st[:len(st)-1],
		"long":                      append(slices.Clone(st), 0),
		"header only":               st[:12],
		"unknown flag":              set(st, flags, st[flags]|8),
		"bf16 in float32":           set(st32, flags, st32[flags]|deltaFlagBF16),
		"more streams":              set(st, len(deltaStateMagic), st[len(deltaStateMagic)]+1),
		"float32 flag, bf16 values": set(st, flags, st[flags]&^deltaFlagBF16),
		"unknown magic":             append([]byte("GRAFTDB2"), st[8:]...),
		"float32 magic on":          append([]byte(deltaStateMagic), st[8:]...),
	} {
		d := newDeltaBF16(t, "delta:2:0.05:5")
		if err := d.RestoreStreams(st); err != nil {
			t.Fatal(err)
		}
		if err := d.RestoreStreams(bad); err == nil {
			t.Errorf("%s: a malformed state was accepted", name)
		}
		if now, _ := d.StreamState(); !bytes.Equal(now, st) {
			t.Errorf("%s: a refused state changed the codec's", name)
		}
	}
}

// Whatever a checkpoint holds, RestoreStreams returns an error or a state
// that round-trips, and counts the bytes of the streams it keeps alone.
func FuzzDeltaRestoreStreams(f *testing.F) {
	for _, bf16 := range []bool{false, true} {
		st, _, _, _ := deltaBF16State(bf16)
		f.Add(bf16, st)
		f.Add(!bf16, st)
	}
	f.Add(true, []byte(deltaStateMagicBF16+"\x01\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, bf16 bool, state []byte) {
		start := memacct.Held(memacct.Communication)
		d := newDelta(t, "delta:2")
		d.SetBF16(bf16)
		if err := d.RestoreStreams(state); err != nil {
			if got := memacct.Held(memacct.Communication) - start; got != 0 {
				t.Fatalf("a refused state left %d bytes counted", got)
			}
			return
		}
		again, err := d.StreamState()
		if err != nil {
			t.Fatal(err)
		}
		e := newDelta(t, "delta:2")
		e.SetBF16(bf16)
		if err := e.RestoreStreams(again); err != nil {
			t.Fatalf("the codec's own state is refused: %v", err)
		}
		if third, _ := e.StreamState(); !bytes.Equal(third, again) {
			t.Fatal("the state does not round-trip")
		}
		for _, c := range []*Delta{d, e} {
			if err := c.RestoreStreams(nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := memacct.Held(memacct.Communication) - start; got != 0 {
			t.Fatalf("%d bytes counted after the streams were dropped", got)
		}
	})
}

// The codec at bf16 precision keeps its state at bf16 from the first
// message, whatever the bits; without SetBF16 it keeps float32 and its
// messages and state are the float32 codec's (TestDeltaEndsAgree).
func TestDeltaSetBF16(t *testing.T) {
	for _, spec := range []string{"delta", "delta:r", "entropy:delta:2:0:0"} {
		c, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		s := c.Caps().Streaming
		s.SetBF16(true)
		var d *Delta
		if e, ok := c.(*Entropy); ok {
			d = e.Inner.(*Delta)
		} else {
			d = c.(*Delta)
		}
		if !d.BF16 {
			t.Errorf("%s: SetBF16 through Caps did not reach the delta codec", spec)
		}
		x := newDrift(4, 9, 1, 2).next()
		c.Encode(nil, x, 4, 9, 16, Key{})
		if st := d.streams[streamEnd{}]; st == nil || !st.bf16 || st.recon != nil || len(st.half) != 36 {
			t.Errorf("%s: the stream keeps %+v", spec, st)
		}
	}
}

// BenchmarkDeltaBF16State times the codec with its reconstructions in
// float32 and in bfloat16 side by side in one process: messages of
// 3,000 rows, which stay in
// cache, and of 124k rows (BenchmarkDeltaOutOfCache's), which do not.
// ns/value is per value of the rows.
func BenchmarkDeltaBF16State(b *testing.B) {
	for _, tc := range []struct{ rows, width int }{{3000, 32}, {3000, 64}, {124000, 64}, {124000, 128}} {
		for _, state := range []string{"fp32", "bf16"} {
			benchDeltaStreamAt(b, fmt.Sprintf("rows=%d/w=%d/%s", tc.rows, tc.width, state), "delta:2:0:0", tc.rows, tc.width, 2, state == "bf16")
		}
	}
}

// Rows shorter than rows×width, to encode or to decode into, are a panic
// in both states, on the kernels, which read x unchecked, and on the Go
// loops: never a read or write past the slice's end.
func TestDeltaShortRowsPanic(t *testing.T) {
	const rows, width = 4, 16
	short := func() []float32 {
		backing := make([]float32, rows*width)
		return backing[: (rows-1)*width : rows*width] // a row short, the rest in reach
	}
	for _, bf16 := range []bool{false, true} {
		send, recv := newDelta(t, "delta:2:0:0"), newDelta(t, "delta:2:0:0")
		send.SetBF16(bf16)
		recv.SetBF16(bf16)
		msg := send.Encode(nil, make([]float32, rows*width), rows, width, 1, Key{})
		for name, f := range map[string]func(){
			"encoded": func() { send.Encode(nil, short(), rows, width, 1, Key{Step: 1}) },
			"decoded": func() { _ = recv.Decode(short(), rows, width, 1, Key{}, msg) },
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("bf16 %v: rows a row short were %s", bf16, name)
					}
				}()
				f()
			}()
		}
	}
}
