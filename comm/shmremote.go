package comm

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Remote reads: over a shared-memory link, a large data frame need not
// pass through the ring. Where the operating system lets each rank read the
// other's memory (Linux's process_vm_readv: the same user, and ptrace
// allowed between the two processes, which Yama's ptrace_scope 1 or a
// container's seccomp profile may forbid), the writer puts in the ring
// only where its payload lies, a descriptor (flagRemote), and waits; the
// reader copies the payload from the writer's memory straight into the
// receive's buffer and counts the frame done in the segment, waking the
// writer. Each byte is copied once instead of twice (into the ring, then
// out of it). Sending ranks never let the peer write their memory, and
// grant nothing the system did not already allow: a pair that cannot
// read each other keeps the ring.
//
// Identity: at link setup each rank names its process and a random cookie
// in its memory (over the authenticated control connection); the peer
// reads the cookie from that process and keeps a handle on it (a pidfd),
// so a process that ends can never be confused with one that reuses its
// id. After every remote read the reader checks that the writer still
// runs: a copy from a process that ended midway fails the communicator
// rather than delivering what it read.

// flagRemote marks a data frame whose payload is a remoteDescriptor.
const flagRemote byte = 2

// remoteDescriptorLen is the payload of a flagRemote frame: the address
// and the length of the data in the writer's memory.
const remoteDescriptorLen = 16

// maxRemotePayload bounds the data one remote frame describes. A frame
// in the ring is bounded so that a reader never buffers much of it; a
// remote frame is copied straight into the receive's own buffer, so a
// collective sends each peer's whole buffer as one (up to this bound),
// and each side wakes once per message rather than once per 4 MiB.
const maxRemotePayload = 1 << 30

// remoteMin is the smallest payload sent by descriptor: below it the
// ring's copy costs less than the two wake-ups of a remote read.
const remoteMin = 64 << 10

// shmRemoteDone is the offset of ring d's counter of remote frames the
// reader has finished copying (written by ring d's consumer).
func shmRemoteDone(d int) int { return 2048 + d*shmLine }

// remoteProbe is what a rank tells its peer about itself: its process and
// a cookie the peer reads from it to prove both.
type remoteProbe struct {
	Pid    int    `json:"pid"`
	Addr   uint64 `json:"addr"`
	Cookie []byte `json:"cookie"`
}

// newRemoteProbe returns this process's probe and the cookie's memory,
// which must stay reachable until the peer has read it.
func newRemoteProbe() (*remoteProbe, []byte) {
	cookie := make([]byte, 16)
	rand.Read(cookie)
	return &remoteProbe{Pid: os.Getpid(), Addr: uint64(uintptr(unsafe.Pointer(&cookie[0]))), Cookie: append([]byte(nil), cookie...)}, cookie
}

// remotePeer is the peer process this rank reads from.
type remotePeer struct {
	proc *os.Process
	pid  int
}

// openRemotePeer checks that this rank can read the probe's process and
// finds the cookie where the probe says; nil (with the reason) if not.
func openRemotePeer(pr *remoteProbe) (*remotePeer, error) {
	if pr == nil || pr.Pid <= 0 || len(pr.Cookie) != 16 {
		return nil, fmt.Errorf("the peer offers no remote reads")
	}
	proc, err := os.FindProcess(pr.Pid) // a pidfd handle on Linux
	if err != nil {
		return nil, err
	}
	var got [16]byte
	if err := readRemote(pr.Pid, got[:], pr.Addr); err != nil {
		proc.Release()
		return nil, fmt.Errorf("reading the peer's memory: %w", err)
	}
	if string(got[:]) != string(pr.Cookie) {
		proc.Release()
		return nil, fmt.Errorf("the peer's memory does not hold its cookie")
	}
	if err := processAlive(proc); err != nil {
		proc.Release()
		return nil, err
	}
	return &remotePeer{proc: proc, pid: pr.Pid}, nil
}

// read copies len(dst) bytes at addr in the peer's memory into dst, and
// fails unless the peer process ran until the copy was complete.
func (rp *remotePeer) read(dst []byte, addr uint64) error {
	if err := readRemote(rp.pid, dst, addr); err != nil {
		return fmt.Errorf("reading the peer's memory: %w", err)
	}
	return processAlive(rp.proc)
}

// processAlive fails once proc has ended (through its pidfd, so not for
// another process that reuses its id).
func processAlive(proc *os.Process) error {
	if err := proc.Signal(syscall.Signal(0)); err != nil {
		return fmt.Errorf("the peer process ended: %w", err)
	}
	return nil
}

// writeRemote writes data frame h whose payload is sent by descriptor, and
// waits until the peer has copied it (or the deadline, the peer's end,
// Close or stop: the communicator's failure, whose last control frame then
// follows at once, instead of after the peer's copy). It holds the mapping throughout: a send it stops waiting for is
// marked given up in the segment before the payload returns to its owner,
// who may reuse it at once, and a reader that copies the frame later
// fails instead of delivering what the buffer then holds.
func (c *shmConn) writeRemote(h frameHeader, payload []byte, hdr *[frameHeaderLen]byte, stop <-chan struct{}) error {
	var frame [frameHeaderLen + remoteDescriptorLen]byte
	h.flags |= flagRemote
	h.length = remoteDescriptorLen
	h.encode(hdr)
	copy(frame[:], hdr[:])
	binary.NativeEndian.PutUint64(frame[frameHeaderLen:], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(payload)))))
	binary.NativeEndian.PutUint64(frame[frameHeaderLen+8:], uint64(len(payload)))
	if !c.enter() {
		return errShmClosedRemote
	}
	defer c.mu.RUnlock()
	c.remoteSent++
	want := c.remoteSent
	n, err := c.write(frame[:])
	if err == nil {
		done := c.out.remoteDone
		err = c.wait(c.out.writerWaiting, func() bool { return done.Load() >= want }, c.spaceBell, &c.writeDeadline, &c.writeSpin, stop)
	}
	if err != nil && n > 0 {
		c.out.remoteGaveUp.Store(want) // before the payload is let go
	}
	runtime.KeepAlive(payload) // the peer reads it until done says so
	return err
}

// remoteChunk is the first part of a remote frame copied at once. The
// receive buffer grows as the copies succeed, each copy as long as all
// before it (at least a chunk), so a descriptor that claims more than the
// peer's memory holds costs the receiver at most about twice what it
// could read before the copy fails, not its claimed length, while a frame
// that is there takes a few copies and a growing buffer a few doublings.
const remoteChunk = 64 << 20

// readRemoteFrame copies the n bytes at addr in the peer's memory that a
// flagRemote frame describes into the buffers next returns, a chunk at a
// time; then it tells the writer. It fails with errRemoteGaveUp if the
// writer gave the frame up before the copy was complete.
func (c *shmConn) readRemoteFrame(n int, addr uint64, next func(int) ([]byte, error)) error {
	c.remoteRead++
	for off := 0; off < n; {
		dst, err := next(min(n-off, max(remoteChunk, off)))
		if err != nil {
			return err
		}
		if err := c.remote.read(dst, addr+uint64(off)); err != nil {
			return err
		}
		off += len(dst)
	}
	if !c.enter() {
		return errShmClosedRemote
	}
	defer c.mu.RUnlock()
	if c.in.remoteGaveUp.Load() >= c.remoteRead {
		return errRemoteGaveUp
	}
	c.in.remoteDone.Add(1)
	if c.in.writerWaiting.CompareAndSwap(1, 0) {
		c.bell(bellSpace)
	}
	return nil
}

// errShmClosedRemote: this side closed the link during a remote frame (as
// net.ErrClosed, this side's doing, not the peer's).
var errShmClosedRemote = fmt.Errorf("shared memory: %w", net.ErrClosed)

// errRemoteGaveUp: the writer stopped waiting for a remote frame before
// the reader's copy was complete, so the copy may hold anything. What
// follows on the link is the writer's last control frame (an abort) or
// its end.
var errRemoteGaveUp = errors.New("shared memory: the peer stopped sending a frame while it was being copied")

// errSendStopped: a remote send given up because the communicator failed.
var errSendStopped = errors.New("the communicator failed")

// sendsRemote reports whether a payload of n bytes goes to the peer by
// descriptor.
func (c *shmConn) sendsRemote(n int) bool { return c.peerReads && n >= remoteMin }

// remoteCounter is ring d's counter of remote frames done.
func remoteCounter(mem []byte, d int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&mem[shmRemoteDone(d)]))
}
