package comm

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

func TestFrameDecoding(t *testing.T) {
	good := appendFrame(nil, frameData, flagMore, 7, 3, []byte("payload"))
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 0x10; return b }
	cases := []struct {
		name string
		in   []byte
		max  int
		want error // nil: decodes to good's fields
		text string
	}{
		{name: "valid", in: good, max: 100},
		{name: "empty input", in: nil, max: 100, want: io.EOF},
		{name: "short header", in: good[:10], max: 100, want: io.ErrUnexpectedEOF},
		{name: "truncated payload", in: good[:frameHeaderLen+3], max: 100, text: "truncated"},
		{name: "header bit flip", in: flip(4), max: 100, want: ErrCorruptFrame, text: "header checksum"},
		{name: "payload bit flip", in: flip(frameHeaderLen + 1), max: 100, want: ErrCorruptFrame, text: "payload checksum"},
		{name: "over the limit", in: good, max: 6, want: ErrCorruptFrame, text: "exceeds"},
		{name: "unknown type", in: appendFrame(nil, 0, 0, 0, 0, nil), max: 100, want: ErrCorruptFrame, text: "unknown type"},
		{name: "unknown flag", in: appendFrame(nil, frameData, 4, 0, 0, nil), max: 100, want: ErrCorruptFrame, text: "flags"},
		{name: "heartbeat with payload", in: appendFrame(nil, frameHeartbeat, 0, 0, 0, []byte{1}), max: 100, want: ErrCorruptFrame, text: "heartbeat"},
	}
	for _, tc := range cases {
		h, p, err := readFrame(bytes.NewReader(tc.in), tc.max, nil)
		if tc.want == nil && tc.text == "" {
			if err != nil || h.typ != frameData || h.flags != flagMore || h.site != 7 || h.seq != 3 || string(p) != "payload" {
				t.Errorf("%s: got %+v %q %v", tc.name, h, p, err)
			}
			continue
		}
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !bytes.Contains([]byte(err.Error()), []byte(tc.text)) {
			t.Errorf("%s: got %v; want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
	}
}

// FuzzReadFrame: any input either decodes to a frame that re-encodes to the
// same bytes, or is an error; never a panic, never an allocation beyond the
// limit.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, frameData, 0, 1, 2, []byte("hello")))
	f.Add(appendFrame(nil, frameHeartbeat, 0, 0, 0, nil))
	f.Add(appendFrame(nil, frameControl, 0, 0, 0, []byte(`{"kind":"abort","lost":1}`)))
	f.Add(appendFrame(appendFrame(nil, frameData, flagMore, 1, 2, []byte("a")), frameData, 0, 1, 2, []byte("b")))
	f.Add([]byte{})
	const limit = 1 << 10
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for {
			h, p, err := readFrame(r, limit, nil)
			if err != nil {
				return
			}
			if len(p) > limit || int(h.length) != len(p) {
				t.Fatalf("payload of %d bytes for a header saying %d (limit %d)", len(p), h.length, limit)
			}
			again := appendFrame(nil, h.typ, h.flags, h.site, h.seq, p)
			if h2, p2, err := readFrame(bytes.NewReader(again), limit, nil); err != nil || h2 != h || !bytes.Equal(p, p2) {
				t.Fatalf("re-encoded frame reads back as %+v %q %v, want %+v %q", h2, p2, err, h, p)
			}
		}
	})
}

// script is a ReadWriter that replays fixed input and records output.
type script struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (s *script) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *script) Write(p []byte) (int, error) { return s.out.Write(p) }

// FuzzHandshake: whatever a peer sends, neither side accepts it without the
// secret (the nonces are fresh, so no fixed input can carry a valid proof),
// and nothing panics.
func FuzzHandshake(f *testing.F) {
	hello := append(handshakeMagic[:], make([]byte, nonceLen)...)
	f.Add(hello, false)
	f.Add(append(bytes.Clone(hello), make([]byte, macLen)...), false)
	f.Add(append(bytes.Clone(hello), make([]byte, macLen+1)...), true)
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), true)
	f.Fuzz(func(t *testing.T, in []byte, dialer bool) {
		s := &script{in: bytes.NewReader(in)}
		var err error
		if dialer {
			err = handshakeDial(s, testSecret)
		} else {
			err = handshakeAccept(s, testSecret)
		}
		if err == nil {
			t.Fatal("a scripted peer passed the handshake")
		}
		if s.in.Len() > 0 && int(s.in.Size())-s.in.Len() > 8+nonceLen+macLen {
			t.Fatalf("read %d bytes before deciding", int(s.in.Size())-s.in.Len())
		}
	})
}

func TestHandshake(t *testing.T) {
	cases := []struct {
		name           string
		dialer, accept []byte
		ok             bool
	}{
		{"same secret", testSecret, testSecret, true},
		{"different secrets", []byte("a"), []byte("b"), false},
		{"dialer without secret", nil, testSecret, false},
	}
	for _, tc := range cases {
		a, b := pipePair(t)
		errs := make(chan error, 1)
		go func() { errs <- handshakeAccept(b, tc.accept); b.Close() }()
		errD := handshakeDial(a, tc.dialer)
		a.Close()
		errA := <-errs
		if ok := errD == nil && errA == nil; ok != tc.ok {
			t.Errorf("%s: dialer %v, acceptor %v; want ok=%v", tc.name, errD, errA, tc.ok)
		}
	}
}

// A link flag either fails to parse or gives a finite positive rate and a
// non-negative latency.
func FuzzParseLink(f *testing.F) {
	for _, s := range []string{"1gbit:1ms", "2GB:0.5ms", "100mbit", "nangbit", "1e308GB", "5e-324bit", ":", "bit", "kB:-1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLink(s)
		if err != nil {
			return
		}
		if !(l.BytesPerSecond > 0) || math.IsInf(l.BytesPerSecond, 0) || l.Latency < 0 {
			t.Fatalf("ParseLink(%q) = %+v", s, l)
		}
	})
}
