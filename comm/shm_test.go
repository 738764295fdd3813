//go:build linux

package comm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A segment is a file only its user can open, and it is gone as soon as
// the peer has mapped it: nothing else can attach afterwards, even knowing
// the name. The two mappings are one memory.
func TestShmSegmentIsPrivateAndGoneOnceMapped(t *testing.T) {
	mem, path, token, err := createSegment(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapSegment(mem)()
	defer removeSegment(path)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || filepath.Dir(path) != shmDir() {
		t.Fatalf("segment %s has mode %v; want 0600 in %s", path, st.Mode(), shmDir())
	}
	if _, _, err := openSegment(path, bytes.Repeat([]byte{1}, shmTokenLen)); err == nil || !strings.Contains(err.Error(), "not the one") {
		t.Fatalf("opening with the wrong token: %v", err)
	}

	mem, path, token, err = createSegment(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapSegment(mem)()
	defer removeSegment(path)
	peer, ring, err := openSegment(path, token)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapSegment(peer)()
	if ring != 4096 || len(peer) != len(mem) {
		t.Fatalf("opened a %d-byte segment with %d-byte rings; want %d bytes, 4096", len(peer), ring, len(mem))
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment still there once mapped: %v", err)
	}
	if _, _, err := openSegment(path, token); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a second process attaching: %v; want the file gone", err)
	}
	mem[shmHeader] = 42
	if peer[shmHeader] != 42 {
		t.Fatal("the two mappings are not one memory")
	}
	if _, _, err := openSegment("/etc/passwd", token); err == nil {
		t.Fatal("opened a file outside the segment directory")
	}
}

// Once a mesh has formed, every segment this process maps has been
// removed from the file system: the kernel lists such mappings as deleted.
func TestShmMeshLeavesNoSegmentFiles(t *testing.T) {
	comms := meshOver(t, 3, linkShm)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(maps), "\n") {
		if !strings.Contains(line, filepath.Join(shmDir(), shmPrefix)) {
			continue
		}
		n++
		if !strings.HasSuffix(line, "(deleted)") {
			t.Errorf("segment still has a name: %s", line)
		}
	}
	if n < 3 {
		t.Errorf("%d segment mappings, want one per rank of each of the 3 pairs", n)
	}
	for _, c := range comms {
		c.Close()
	}
}

// A pair using shared memory next to a pair that may not: a rank that asks
// for TCP gets it with every peer, the others still share memory, and the
// collectives do not care.
func TestShmAndTCPInOneMesh(t *testing.T) {
	comms, errs := connectAll(t, 3, func(rank int, o *Options) {
		if rank == 1 {
			o.Transport = TransportTCP
		}
	})
	if err := firstErr(errs); err != nil {
		t.Fatal(err)
	}
	want := map[[2]int]string{{0, 1}: linkTCP, {1, 2}: linkTCP, {0, 2}: linkShm}
	for pair, link := range want {
		if a, b := comms[pair[0]].Transport(pair[1]), comms[pair[1]].Transport(pair[0]); a != link || b != link {
			t.Errorf("ranks %v: %q and %q, want %q", pair, a, b, link)
		}
	}
	err := firstErr(onEach(comms, func(c *TCP) error {
		data := []float32{float32(c.Rank() + 1)}
		if err := c.AllReduce("g", data); err != nil {
			return err
		}
		if data[0] != 6 {
			return errors.New("wrong sum")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
}

// shmPair returns two ends of a shared-memory link with rings of ring
// bytes, as two ranks would hold them.
func shmPair(t *testing.T, ring int) (*shmConn, *shmConn) {
	ca, cb := pipePair(t)
	mem, path, token, err := createSegment(ring)
	if err != nil {
		t.Fatal(err)
	}
	defer removeSegment(path)
	peer, _, err := openSegment(path, token)
	if err != nil {
		t.Fatal(err)
	}
	a := newShmConn(ca, mem, ring, true, unmapSegment(mem), nil, false)
	b := newShmConn(cb, peer, ring, false, unmapSegment(peer), nil, false)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// Deadlines, the peer's end and this side's Close reach a link's Read and
// Write as they reach a TCP connection's: a timeout, the bytes written
// before the end and then EOF, and net.ErrClosed.
func TestShmConnDeadlinesAndEnds(t *testing.T) {
	a, b := shmPair(t, 4096)
	timedOut := func(what string, err error, start time.Time) {
		t.Helper()
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%s: %v; want a timeout", what, err)
		}
		if d := time.Since(start); d < 100*time.Millisecond || d > time.Second {
			t.Fatalf("%s: timed out after %v, want 100 ms", what, d)
		}
	}
	start := time.Now()
	b.SetReadDeadline(start.Add(100 * time.Millisecond))
	_, err := b.Read(make([]byte, 10))
	timedOut("read with nothing sent", err, start)

	msg := make([]byte, 3*4096)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	start = time.Now()
	a.SetWriteDeadline(start.Add(100 * time.Millisecond))
	n, err := a.Write(msg)
	timedOut("write into a full ring", err, start)
	if n != 4096 {
		t.Fatalf("wrote %d bytes into a 4096-byte ring", n)
	}
	a.SetWriteDeadline(time.Time{})
	b.SetReadDeadline(time.Time{})

	// The rest streams through the ring while b reads.
	wrote := make(chan error, 1)
	go func() { _, err := a.Write(msg[n:]); wrote <- err }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(b, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("read %v; bytes equal: %v", err, bytes.Equal(got, msg))
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}

	// a ends with bytes in flight: b reads them, then EOF.
	if _, err := a.Write(msg[:100]); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := a.Write(msg[:1]); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close: %v, want net.ErrClosed", err)
	}
	rest, err := io.ReadAll(b)
	if err != nil || !bytes.Equal(rest, msg[:100]) {
		t.Fatalf("after the peer's end: read %d bytes, %v; want the 100 sent, then EOF", len(rest), err)
	}
	if _, err := b.Write(make([]byte, 2*4096)); !errors.Is(err, errShmPeerGone) {
		t.Fatalf("writing more than the ring to a peer that is gone: %v", err)
	}
	b.Close()
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after Close: %v, want net.ErrClosed", err)
	}
}

// This side's Close is this side's doing also where the end of the
// connection it causes is seen with it: a wait that finds both ends with
// net.ErrClosed, never the peer's end, which a rank would report as the
// peer lost.
func TestShmCloseIsNotThePeersEnd(t *testing.T) {
	a, _ := shmPair(t, 4096)
	a.mu.RLock() // as a Read or Write in progress holds it
	closing := make(chan struct{})
	go func() { a.Close(); close(closing) }()
	<-a.closed
	<-a.peerGone // Close ended the connection; it waits for the mapping
	for range 100 {
		var flag atomic.Uint32
		var deadline atomic.Int64
		spin := shmSpin
		if err := a.wait(&flag, func() bool { return false }, a.dataBell, &deadline, &spin, nil); !errors.Is(err, net.ErrClosed) {
			a.mu.RUnlock()
			t.Fatalf("waiting after this side's Close: %v, want net.ErrClosed", err)
		}
	}
	a.mu.RUnlock()
	<-closing
}

// Two ranks add the peer's values where they lie in the ring (lending),
// also when earlier messages of odd lengths have left the values unaligned
// in the ring and split at its end: the sums are the group's, bit for bit.
func TestShmLentAllReduceAfterOddMessages(t *testing.T) {
	comms := meshOver(t, 2, linkShm)
	if !comms[0].peers[1].canLend(4 * ringSegmentValues) {
		t.Fatal("a two-rank shared-memory link does not lend its segments")
	}
	n := 3*ringSegmentValues + 5
	for shift := range 4 {
		inputs := randomInputs(2, n, uint64(shift))
		want := referenceSum(inputs)
		err := firstErr(onEach(comms, func(c *TCP) error {
			// A message of 1+shift bytes each way moves every later frame
			// off the ring's 4-byte grid by that much.
			if err := c.Send("odd", 1-c.Rank(), make([]byte, 1+shift)); err != nil {
				return err
			}
			if _, _, err := c.Recv("odd", 1-c.Rank(), time.Time{}); err != nil {
				return err
			}
			for rep := range 3 { // the frames reach the ring's end, and wrap
				data := append([]float32(nil), inputs[c.Rank()]...)
				if err := c.AllReduce("g", data); err != nil {
					return err
				}
				for i := range data {
					if data[i] != want[i] {
						return fmt.Errorf("shift %d, rep %d: [%d] = %v, want %v", shift, rep, i, data[i], want[i])
					}
				}
			}
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAddBytesUnaligned(t *testing.T) {
	buf := make([]byte, 4*100+3)
	want := make([]float32, 100)
	for off := range 4 {
		src := buf[off : off+400]
		for i := range want {
			v := float32(i) * 1.5
			binary.NativeEndian.PutUint32(src[4*i:], math.Float32bits(v))
			want[i] = 1 + v
		}
		dst := make([]float32, 100)
		for i := range dst {
			dst[i] = 1
		}
		addBytes(dst, src, make([]float32, 7))
		if !slices.Equal(dst, want) {
			t.Fatalf("offset %d: %v, want %v", off, dst[:5], want[:5])
		}
	}
}

// A link closed under a rank in the middle of its all-reduces, as a crash
// does it, ends the calls of both ranks with errors, and its Close does
// not wait for a collective that waits for it.
func TestShmClosedDuringAllReduce(t *testing.T) {
	for range 5 {
		comms := meshOver(t, 2, linkShm)
		errs := make(chan error, 2)
		for _, c := range comms {
			go func() {
				data := make([]float32, 3*ringSegmentValues)
				for {
					if err := c.AllReduce("g", data); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		closed := make(chan struct{})
		go func() { comms[1].peers[0].conn.Close(); close(closed) }()
		for range 2 {
			select {
			case err := <-errs:
				var pe *PeerError
				if !errors.As(err, &pe) {
					t.Fatalf("%v; want a PeerError", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("an all-reduce still runs 5 s after its link closed")
			}
		}
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("closing the link hangs")
		}
	}
}

// A remote frame that this side's Close interrupts ends with
// net.ErrClosed, this side's doing, which a rank reports as its own
// closing rather than as the peer lost; so does a remote write begun
// after Close.
func TestShmRemoteAfterCloseIsThisSides(t *testing.T) {
	a, _ := shmPair(t, 4096)
	a.Close()
	if err := a.readRemoteFrame(0, 0, nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("reading a remote frame after Close: %v, want net.ErrClosed", err)
	}
	var hdr [frameHeaderLen]byte
	if err := a.writeRemote(frameHeader{}, make([]byte, 8), &hdr, nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("writing a remote frame after Close: %v, want net.ErrClosed", err)
	}
}
