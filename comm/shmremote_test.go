//go:build linux

package comm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// A remote peer is the process that holds the cookie it announced: a
// wrong cookie, address or process is refused, and a read from a process
// that has ended fails rather than returning whatever the id now names.
func TestRemotePeerIsTheProcessThatHoldsTheCookie(t *testing.T) {
	probe, cookie := newRemoteProbe()
	defer runtime.KeepAlive(cookie)
	rp, err := openRemotePeer(probe)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("graft"), 1<<16)
	got := make([]byte, len(data))
	if err := rp.read(got, uint64(uintptr(unsafe.Pointer(&data[0])))); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reading this process: %v", err)
	}
	rp.proc.Release()

	wrong := *probe
	wrong.Cookie = bytes.Repeat([]byte{7}, 16)
	if _, err := openRemotePeer(&wrong); err == nil || !strings.Contains(err.Error(), "cookie") {
		t.Errorf("wrong cookie: %v", err)
	}
	wrong = *probe
	wrong.Addr = 8
	if _, err := openRemotePeer(&wrong); err == nil {
		t.Error("a cookie at address 8 was read")
	}

	// A process that has ended, reaped or not.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dead := &remotePeer{proc: cmd.Process, pid: cmd.Process.Pid}
	cmd.Wait()
	if err := dead.read(make([]byte, 16), probe.Addr); err == nil {
		t.Error("read from an ended process")
	}
	if err := processAlive(cmd.Process); err == nil {
		t.Error("an ended process counts as alive")
	}
}

// A remote frame on a link whose reader does not read the peer's memory
// (TCP here) is corrupt: it ends the job naming the sender.
func TestRemoteFrameWhereNotOfferedIsCorrupt(t *testing.T) {
	comms := meshOver(t, 2, TransportTCP)
	p := comms[0].peers[1]
	h := frameHeader{typ: frameData, flags: flagRemote, length: remoteDescriptorLen, seq: comms[0].seq + 1, site: siteTag("x")}
	var hdr [frameHeaderLen]byte
	h.crc = payloadChecksum(make([]byte, remoteDescriptorLen))
	h.encode(&hdr)
	if _, err := p.conn.Write(append(hdr[:], make([]byte, remoteDescriptorLen)...)); err != nil {
		t.Fatal(err)
	}
	errs := onEach(comms, func(c *TCP) error { return c.AllReduce("x", make([]float32, 4)) })
	if err := errs[1]; err == nil || !strings.Contains(err.Error(), "remote frame") {
		t.Fatalf("rank 1: %v; want the remote frame refused", err)
	}
}

// A remote send that the writer gives up on (its deadline passes, or the
// link is closed, while the peer has not yet copied the data) leaves the
// data to its owner, who may reuse the buffer at once: a reader that
// copies the frame afterwards must fail rather than deliver whatever the
// buffer then holds.
func TestRemoteSendAbandonedIsNotDelivered(t *testing.T) {
	for _, how := range []string{"deadline", "close"} {
		t.Run(how, func(t *testing.T) {
			a, b := shmPair(t, 1<<16)
			probe, cookie := newRemoteProbe()
			defer runtime.KeepAlive(cookie)
			rp, err := openRemotePeer(probe)
			if err != nil {
				t.Skipf("no remote reads here: %v", err)
			}
			b.remote, a.peerReads = rp, true
			payload := bytes.Repeat([]byte{1}, remoteMin)
			var hdr [frameHeaderLen]byte
			wrote := make(chan error, 1)
			if how == "deadline" {
				a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			}
			go func() {
				wrote <- a.writeRemote(frameHeader{typ: frameData, length: uint32(len(payload))}, payload, &hdr, nil)
			}()
			if how == "close" {
				time.Sleep(50 * time.Millisecond)
				a.Close()
			}
			if err := <-wrote; err == nil {
				t.Fatal("the send completed with nobody reading")
			}
			for i := range payload {
				payload[i] = 2 // the sender's buffer, reused
			}
			var hb [frameHeaderLen]byte
			if _, err := io.ReadFull(b, hb[:]); err != nil {
				t.Fatal(err)
			}
			if h, err := decodeHeader(&hb, maxDataPayload); err != nil || h.flags&flagRemote == 0 {
				t.Fatalf("header %+v, %v", h, err)
			}
			var d [remoteDescriptorLen]byte
			if _, err := io.ReadFull(b, d[:]); err != nil {
				t.Fatal(err)
			}
			dst := make([]byte, binary.NativeEndian.Uint64(d[8:]))
			if err := b.readRemoteFrame(len(dst), binary.NativeEndian.Uint64(d[:]), func(int) ([]byte, error) { return dst, nil }); err == nil {
				t.Fatalf("delivered an abandoned frame (first byte %d, sent as 1)", dst[0])
			}
		})
	}
}

// A rank that aborts while a remote send waits for a peer that has not
// yet come to the call still tells the peer why: the send is given up at
// once and the abort follows it, and the peer, finding the frame given up,
// reads on to the reason, not "lost". (Over the ring the call may even
// succeed: the frame was already copied into it.)
func TestAbortBehindRemoteSendReachesThePeer(t *testing.T) {
	comms := meshOver(t, 2, linkShm)
	done := make(chan error, 1)
	go func() {
		done <- comms[0].AllToAll("a", [][]byte{nil, make([]byte, 1<<20)}, make([][]byte, 2))
	}()
	time.Sleep(100 * time.Millisecond)
	comms[0].Abort(errors.New("boom"))
	<-done
	time.Sleep(1500 * time.Millisecond) // past the grace in which a failed rank sends its last frame
	err := comms[1].AllToAll("a", [][]byte{make([]byte, 1<<20), nil}, make([][]byte, 2))
	if !errors.Is(err, ErrPeerAborted) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("rank 1: %v; want rank 0's abort, boom", err)
	}
}

// A remote frame is copied a chunk at a time into a buffer that grows
// with the copies: one that describes more than the peer's memory holds
// fails having asked for about a chunk of buffer, not its claimed length,
// and one longer than a chunk arrives whole.
func TestRemoteFrameGrowsItsBufferWithTheCopy(t *testing.T) {
	_, b := shmPair(t, 1<<16)
	probe, cookie := newRemoteProbe()
	defer runtime.KeepAlive(cookie)
	rp, err := openRemotePeer(probe)
	if err != nil {
		t.Skipf("no remote reads here: %v", err)
	}
	b.remote = rp
	var got []byte
	next := func(n int) ([]byte, error) {
		got = slices.Grow(got, n)
		got = got[:len(got)+n]
		return got[len(got)-n:], nil
	}
	// Page 1 of the address space is never mapped.
	if err := b.readRemoteFrame(maxRemotePayload, 4096, next); err == nil {
		t.Fatal("copied a gigabyte from an unmapped page")
	}
	if len(got) > remoteChunk {
		t.Fatalf("a failed copy asked for %d bytes of buffer; want at most a chunk, %d", len(got), remoteChunk)
	}
	src := make([]byte, remoteChunk+4096+7)
	for i := range src {
		src[i] = byte(i*31 + 7)
	}
	got = got[:0]
	if err := b.readRemoteFrame(len(src), uint64(uintptr(unsafe.Pointer(&src[0]))), next); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("a frame of more than a chunk arrived changed")
	}
}
