package comm

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// A shared-memory link between two ranks on one host: a segment both
// processes map, holding one single-producer single-consumer byte ring per
// direction, carries the same frames a TCP connection would, so the peer's
// writer and reader (tcppeer.go) serve it unchanged. The pair's TCP
// connection stays open beside it as the control channel: a side about to
// sleep asks to be woken, and the other side then writes one byte, a
// doorbell, into the connection; the connection's end is the peer's end
// (a process that dies closes it), exactly as on TCP.
//
// Large data frames may skip the ring: see shmremote.go.
//
// Segment layout (native byte order; positions count bytes ever written or
// read, so head − tail is the bytes waiting):
//
//	offset              size  field
//	0                   8     magic "GRAFTSHM"
//	8                   8     ring size in bytes (a power of two)
//	16                  16    the creator's token, checked by the opener
//	shmCtl(d)+0         8     ring d's head: bytes written by its producer
//	shmCtl(d)+128       8     ring d's tail: bytes read by its consumer
//	shmCtl(d)+256       4     1 while ring d's consumer sleeps (wake it)
//	shmCtl(d)+384       4     1 while ring d's producer sleeps (wake it)
//	2048+d·128          8     remote frames of ring d its consumer copied
//	2304+d·128          8     the last remote frame of ring d its producer
//	                          stopped waiting for (its data may be reused)
//	shmHeader+d·size    size  ring d's bytes
//
// Ring 0 carries the creator's bytes to the opener, ring 1 the reverse.
// Every field a side writes has its own 128-byte block, so the producer's
// and the consumer's stores never share a cache line (or a prefetched pair).
const (
	shmMagic     = "GRAFTSHM"
	shmTokenLen  = 16
	shmHeader    = 4096
	shmLine      = 128
	shmFieldHead = 0 * shmLine
	shmFieldTail = 1 * shmLine
	shmFieldRW   = 2 * shmLine // reader waiting
	shmFieldWW   = 3 * shmLine // writer waiting
)

// shmCtl is the offset of ring d's control block.
func shmCtl(d int) int { return 512 + d*4*shmLine }

// shmSegmentSize is the bytes of a segment with two rings of ringSize.
func shmSegmentSize(ringSize int) int { return shmHeader + 2*ringSize }

// defaultShmRing is each direction's ring: large enough that a 4 MiB frame
// streams through in pieces while the reader drains it, small enough that
// both rings of a pair stay in the last-level cache.
const defaultShmRing = 4 << 20

// shmChunk is the most a writer copies before publishing it, so that the
// reader starts on a large frame while the rest is copied.
const shmChunk = 256 << 10

// shmSpin is the longest a side waiting for the other polls (yielding to
// its own goroutines) before it asks for a doorbell and sleeps: about the
// time the other side takes to copy a chunk, so that a steady stream
// seldom sleeps. Each side halves its polling after a wait that had to
// sleep anyway, and grows it back after one that polling ended, so that
// two ranks sharing one core do not poll for each other in turn: there
// that halved the CPU time of an all-reduce over a fixed 20 us (13.5 ms to
// 8-9 ms for 64 MiB). Polling 200 us cost 30% more CPU time on two cores.
const shmSpin = 20 * time.Microsecond

// Doorbell bytes on the control connection.
const (
	bellData  = 'd' // the ring to you has bytes
	bellSpace = 's' // the ring from you has room
)

// ring is one direction of a segment, seen from one side.
type ring struct {
	head, tail    *atomic.Uint64
	readerWaiting *atomic.Uint32
	writerWaiting *atomic.Uint32
	remoteDone    *atomic.Uint64 // remote frames its consumer has copied (shmremote.go)
	remoteGaveUp  *atomic.Uint64 // the last remote frame its producer stopped waiting for
	data          []byte
	mask          uint64
}

func newRing(mem []byte, d, size int) ring {
	ctl := mem[shmCtl(d):]
	at := func(off int) unsafe.Pointer { return unsafe.Pointer(&ctl[off]) }
	return ring{
		head:          (*atomic.Uint64)(at(shmFieldHead)),
		tail:          (*atomic.Uint64)(at(shmFieldTail)),
		readerWaiting: (*atomic.Uint32)(at(shmFieldRW)),
		writerWaiting: (*atomic.Uint32)(at(shmFieldWW)),
		remoteDone:    remoteCounter(mem, d),
		remoteGaveUp:  remoteCounter(mem, d+2),
		data:          mem[shmHeader+d*size : shmHeader+(d+1)*size : shmHeader+(d+1)*size],
		mask:          uint64(size - 1),
	}
}

// errShmPeerGone is a write to a peer whose control connection has ended.
var errShmPeerGone = errors.New("shared memory: the peer's connection closed")

// shmConn is a net.Conn whose bytes travel through a shared segment. Its
// embedded net.Conn is the pair's TCP connection: addresses come from it,
// doorbells and the peer's end travel on it. One goroutine may read and
// another write at a time, as the peer's reader and writer do.
type shmConn struct {
	net.Conn
	in, out   ring
	dataBell  chan struct{} // a doorbell for in's bytes arrived
	spaceBell chan struct{} // a doorbell for out's room arrived
	peerGone  chan struct{} // closed when the control connection ends
	closed    chan struct{} // closed by Close

	mu    sync.RWMutex // held shared by Read and Write, exclusively to unmap
	unmap func() error // nil once unmapped
	once  sync.Once

	readDeadline, writeDeadline atomic.Int64 // unix nanoseconds, 0 for none
	readTail, writeHead         uint64       // this side's own positions
	readSpin, writeSpin         time.Duration

	remote     *remotePeer // the peer's memory, if this side may read it (shmremote.go)
	peerReads  bool        // the peer reads large payloads from this side's memory
	remoteSent uint64      // remote frames written
	remoteRead uint64      // remote frames read
}

// newShmConn serves a mapped segment: creator says which ring is whose.
// unmap releases the mapping once the link is closed.
func newShmConn(ctl net.Conn, mem []byte, ringSize int, creator bool, unmap func() error, remote *remotePeer, peerReads bool) *shmConn {
	in, out := 1, 0
	if !creator {
		in, out = 0, 1
	}
	c := &shmConn{Conn: ctl, in: newRing(mem, in, ringSize), out: newRing(mem, out, ringSize),
		dataBell: make(chan struct{}, 1), spaceBell: make(chan struct{}, 1),
		peerGone: make(chan struct{}), closed: make(chan struct{}), unmap: unmap, remote: remote, peerReads: peerReads}
	c.readTail, c.writeHead = c.in.tail.Load(), c.out.head.Load()
	c.readSpin, c.writeSpin = shmSpin, shmSpin
	ctl.SetDeadline(time.Time{})
	go c.listen()
	return c
}

// listen reads doorbells until the control connection ends.
func (c *shmConn) listen() {
	defer close(c.peerGone)
	var buf [64]byte
	for {
		n, err := c.Conn.Read(buf[:])
		for _, b := range buf[:n] {
			switch b {
			case bellData:
				notify(c.dataBell)
			case bellSpace:
				notify(c.spaceBell)
			default:
				return // not a doorbell: treat the link as broken
			}
		}
		if err != nil {
			return
		}
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// bell asks the peer to wake its side waiting on the ring (errors surface
// through the connection's end instead).
func (c *shmConn) bell(b byte) { c.Conn.Write([]byte{b}) }

// enter holds the mapping for one Read or Write; false once closed.
func (c *shmConn) enter() bool {
	c.mu.RLock()
	if c.unmap == nil {
		c.mu.RUnlock()
		return false
	}
	return true
}

func (c *shmConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !c.enter() {
		return 0, net.ErrClosed
	}
	defer c.mu.RUnlock()
	b, err := c.peek(len(p))
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	c.discard(n)
	return n, nil
}

// peek waits for bytes to read and returns as many as lie contiguous in
// the ring, at most max, without consuming them (see discard). The caller
// holds the mapping (enter) while it uses them.
func (c *shmConn) peek(max int) ([]byte, error) {
	r := &c.in
	for {
		if avail := r.head.Load() - c.readTail; avail > 0 {
			off := c.readTail & r.mask
			return r.data[off : off+min(uint64(max), avail, uint64(len(r.data))-off)], nil
		}
		tail := c.readTail
		err := c.wait(r.readerWaiting, func() bool { return r.head.Load() != tail }, c.dataBell, &c.readDeadline, &c.readSpin, nil)
		if err == errShmPeerGone {
			if r.head.Load() != tail { // what the peer wrote before it left
				continue
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
	}
}

// discard consumes n bytes that peek returned, freeing their room.
func (c *shmConn) discard(n int) {
	r := &c.in
	c.readTail += uint64(n)
	r.tail.Store(c.readTail)
	if r.writerWaiting.CompareAndSwap(1, 0) {
		c.bell(bellSpace)
	}
}

func (c *shmConn) Write(p []byte) (int, error) {
	if !c.enter() {
		return 0, net.ErrClosed
	}
	defer c.mu.RUnlock()
	return c.write(p)
}

// write is Write with the mapping held (enter).
func (c *shmConn) write(p []byte) (int, error) {
	r := &c.out
	size := uint64(len(r.data))
	written := 0
	for len(p) > 0 {
		room := size - (c.writeHead - r.tail.Load())
		if room == 0 {
			head := c.writeHead
			if err := c.wait(r.writerWaiting, func() bool { return r.tail.Load()+size != head }, c.spaceBell, &c.writeDeadline, &c.writeSpin, nil); err != nil {
				return written, err
			}
			continue
		}
		off := c.writeHead & r.mask
		n := copy(r.data[off:off+min(uint64(len(p)), room, size-off, shmChunk)], p)
		c.writeHead += uint64(n)
		r.head.Store(c.writeHead)
		if r.readerWaiting.CompareAndSwap(1, 0) {
			c.bell(bellData)
		}
		p = p[n:]
		written += n
	}
	return written, nil
}

// wait returns once ready() holds: it polls for up to *spin, then sets
// flag so that the other side rings, and sleeps until the doorbell, the
// deadline, the peer's end (errShmPeerGone), Close (net.ErrClosed, also
// when Close's end of the connection is seen first) or stop's closing
// (errSendStopped; nil: never). The flag is set
// before ready is checked again, and the other side publishes before it
// reads the flag, so one of the two sees the other: a doorbell is never
// missed. *spin adapts (see shmSpin): halved after a wait that had to
// sleep, grown back after one that polling ended.
func (c *shmConn) wait(flag *atomic.Uint32, ready func() bool, bell chan struct{}, deadline *atomic.Int64, spin *time.Duration, stop <-chan struct{}) error {
	var start time.Time
	for i := 0; ; i++ {
		if ready() {
			*spin = min(2**spin+time.Microsecond, shmSpin)
			return nil
		}
		if i%16 == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > *spin {
				break
			}
		}
		runtime.Gosched()
	}
	*spin /= 2
	var timeout <-chan time.Time
	if d := deadline.Load(); d != 0 {
		left := time.Until(time.Unix(0, d))
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := time.NewTimer(left)
		defer t.Stop()
		timeout = t.C
	}
	for {
		flag.Store(1)
		if ready() {
			flag.Store(0)
			return nil
		}
		select {
		case <-bell:
		case <-c.peerGone:
			flag.Store(0)
			select {
			case <-c.closed: // this side's Close ended the connection: not the peer's end
				return net.ErrClosed
			default:
			}
			return errShmPeerGone
		case <-c.closed:
			return net.ErrClosed
		case <-timeout:
			flag.Store(0)
			return os.ErrDeadlineExceeded
		case <-stop:
			flag.Store(0)
			return errSendStopped
		}
	}
}

// Close closes the control connection, which the peer sees as this side's
// end, and unmaps the segment once no Read or Write is using it.
func (c *shmConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.Conn.Close()
		c.mu.Lock()
		if uerr := c.unmap(); err == nil {
			err = uerr
		}
		c.unmap = nil
		c.mu.Unlock()
		if c.remote != nil {
			c.remote.proc.Release()
		}
	})
	return err
}

func (c *shmConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *shmConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(unixNano(t))
	return nil
}

func (c *shmConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.Store(unixNano(t))
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
