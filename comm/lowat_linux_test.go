package comm

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// The low-water mark never makes a read wait for bytes the peer is not
// sending: after a large read that waited with a high mark, a 20-byte
// header (a heartbeat) that comes alone is read at once, and so is a frame
// that trickles in a few bytes at a time.
func TestSockReaderWakesForWhatTheReadNeeds(t *testing.T) {
	if !lowatSafe() {
		t.Skip("a kernel that reads without low-water marks")
	}
	a, b := pipePair(t)
	defer a.Close()
	defer b.Close()
	s := newSockReader(b)
	if s == nil {
		t.Fatal("no low-water-mark reader for a TCP connection")
	}
	frame := make([]byte, wireFrame)
	for i := range frame {
		frame[i] = byte(i * 7)
	}
	sent := make(chan error, 1)
	go func() {
		// The frame in pieces with pauses, so that the reader waits (with the
		// mark at what it still needs) between them.
		for off := 0; off < len(frame); off += 200 << 10 {
			if _, err := a.Write(frame[off:min(len(frame), off+200<<10)]); err != nil {
				sent <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		_, err := a.Write(frame[:frameHeaderLen])
		if err == nil {
			for _, c := range frame[:5] { // a last one byte at a time
				time.Sleep(2 * time.Millisecond)
				if _, err = a.Write([]byte{c}); err != nil {
					break
				}
			}
		}
		sent <- err
	}()
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, wireFrame)
	if err := s.readFull(got); err != nil || !bytes.Equal(got, frame) {
		t.Fatalf("frame: %v (equal: %v)", err, bytes.Equal(got, frame))
	}
	if s.lowat <= frameHeaderLen {
		t.Errorf("the reader never waited with a mark above a header's (%d): the test does not test it", s.lowat)
	}
	start := time.Now()
	var hdr [frameHeaderLen]byte
	if err := s.readFull(hdr[:]); err != nil || !bytes.Equal(hdr[:], frame[:frameHeaderLen]) {
		t.Fatalf("header: %v", err)
	}
	var five [5]byte
	if err := s.readFull(five[:]); err != nil || !bytes.Equal(five[:], frame[:5]) {
		t.Fatalf("five bytes: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the header and five bytes took %v", d)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// Its errors are io.ReadFull's, and its deadlines net's.
func TestSockReaderEndsAsReadFull(t *testing.T) {
	if !lowatSafe() {
		t.Skip("a kernel that reads without low-water marks")
	}
	a, b := pipePair(t)
	defer b.Close()
	s := newSockReader(b)
	b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var buf [8]byte
	var ne net.Error
	if err := s.readFull(buf[:]); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("silent peer: %v; want a timeout", err)
	}
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	a.Write([]byte("abc"))
	a.Close()
	if err := s.readFull(buf[:]); err != io.ErrUnexpectedEOF {
		t.Fatalf("closed after 3 of 8 bytes: %v; want io.ErrUnexpectedEOF", err)
	}
	if err := s.readFull(buf[:]); err != io.EOF {
		t.Fatalf("closed: %v; want io.EOF", err)
	}
	b.Close()
	if err := s.readFull(buf[:]); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("closed on this side: %v; want net.ErrClosed", err)
	}
}

// Kernels before 5.10 could leave a reader waiting for a mark its receive
// buffer cannot reach (before 4.18, for any mark above the window), so
// their links read without marks.
func TestLowWaterMarksOnlyOnKernelsThatWake(t *testing.T) {
	for release, want := range map[string]bool{
		"3.10.0-1160.el7.x86_64": false,
		"4.18.0-513.5.1.el8_9":   false,
		"5.4.0-150-generic":      false,
		"5.10.0-28-amd64":        true,
		"5.15.0":                 true,
		"6.1.0-18-cloud-amd64":   true,
		"10.0":                   true,
		"":                       false,
		"unknown":                false,
	} {
		if got := lowatKernel(release); got != want {
			t.Errorf("kernel %q: low-water marks %v, want %v", release, got, want)
		}
	}
}
