package comm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/graft-gnn/graft/internal/hugepage"
)

// sendOp is one data frame to write. The writer fills in the payload's
// checksum, so the calling collective does not spend its time on it.
type sendOp struct {
	hdr     frameHeader
	payload []byte
	done    chan error // nil when nobody waits for this frame
	// remote: the receiver may copy the payload from this rank's memory
	// (shmremote.go); not for a receive that lends the ring (shmlend.go).
	remote bool
}

// recvOp says where the next data message from a peer goes: into dst
// (exactly len(dst) bytes), or, when grow is set, appended to *grow, or,
// when lend is set, lent in place through lend (exactly want bytes; see
// shmlend.go).
type recvOp struct {
	seq  uint32
	site uint16
	dst  []byte
	grow *[]byte
	lend chan []byte
	back chan struct{} // the lent piece is done with
	want int
	n    int
	done chan error
}

// next returns where the message's next n bytes go.
func (op *recvOp) next(n int) ([]byte, error) {
	var buf []byte
	if op.grow != nil {
		b := hugepage.Grow(*op.grow, n)
		*op.grow = b[:len(b)+n]
		buf = b[len(b) : len(b)+n]
	} else {
		if op.n+n > len(op.dst) {
			return nil, fmt.Errorf("sent more than the %d bytes this rank expects (buffers of different lengths?)", len(op.dst))
		}
		buf = op.dst[op.n : op.n+n]
	}
	op.n += n
	return buf, nil
}

// peer is this rank's connection to one other rank, served by a writer
// (data frames, heartbeats while idle, a last control frame) and a reader.
type peer struct {
	t          *TCP
	rank       int
	conn       net.Conn
	sendq      chan *sendOp
	recvq      chan *recvOp
	ctrl       chan []byte   // the last frame to write (abort or bye)
	gone       chan struct{} // closed when the peer said goodbye
	writerDone chan struct{}
	readerDone chan struct{}

	// sums: data payloads carry and are checked against a CRC-32. A
	// shared-memory link carries them as zero, unchecked: it copies within
	// memory, where nothing corrupts bytes between the copies.
	sums bool

	sendMu sync.Mutex // keeps the frames of one point-to-point message together
	msg    []byte     // the point-to-point message being received

	sock *sockReader // reads a plain TCP connection (nil: read conn as usual)
}

func (p *peer) lost(err error) error { return &PeerError{Rank: p.rank, Err: err} }

func (p *peer) writeLoop() {
	defer close(p.writerDone)
	o := &p.t.opt
	tick := time.NewTicker(o.HeartbeatInterval)
	defer tick.Stop()
	heartbeat := appendFrame(nil, frameHeartbeat, 0, 0, 0, nil)
	var hdr [frameHeaderLen]byte
	last := time.Now()
	for {
		select {
		case op := <-p.sendq:
			// A receiver that is still computing reads late; the call's own
			// deadline, not the heartbeat timeout, bounds the wait.
			p.conn.SetWriteDeadline(time.Now().Add(o.CallTimeout))
			err := p.writeData(op, &hdr)
			if errors.Is(err, errSendStopped) { // the communicator failed: its last frame goes now
				if op.done != nil {
					op.done <- err
				}
				p.writeLast()
				return
			}
			if err != nil { // first, so that the call sees the goodbye the reader may be reading
				p.writeFailed(fmt.Errorf("sending: %w", err))
			}
			if op.done != nil {
				op.done <- err
			}
			if err != nil {
				return
			}
			last = time.Now()
		case <-tick.C:
			if time.Since(last) < o.HeartbeatInterval/2 {
				continue
			}
			p.conn.SetWriteDeadline(time.Now().Add(o.PeerTimeout))
			if _, err := p.conn.Write(heartbeat); err != nil {
				p.writeFailed(fmt.Errorf("sending a heartbeat: %w", err))
				return
			}
			last = time.Now()
		case frame := <-p.ctrl:
			p.conn.SetWriteDeadline(time.Now().Add(time.Second))
			p.conn.Write(frame)
			return
		case <-p.gone:
			return
		case <-p.t.failed:
			p.writeLast()
			return
		}
	}
}

// writeLast writes the control frame fail queued, if any, once the
// communicator has failed (fail queues it before closing failed).
func (p *peer) writeLast() {
	select {
	case frame := <-p.ctrl:
		p.conn.SetWriteDeadline(time.Now().Add(time.Second))
		p.conn.Write(frame)
	default:
	}
}

// wireFrame is the largest data frame a link that carries checksums
// writes: the writer checksums a frame's payload just before the kernel
// copies it, and the reader just after, so that the second pass over the
// bytes finds them in the core's cache (1 MiB stays within a core's L2 of
// 2 MiB) rather than in memory. Each frame costs a write and a header read,
// and the end of each write goes out as a short segment: 256 KiB frames
// took three times the system calls of 1 MiB ones. A queued frame larger
// than this travels as several (flagMore), which the reader joins as it
// joins the frames of any message.
const wireFrame = 1 << 20

// writeData writes op's frame, in frames of at most wireFrame bytes where
// the link carries checksums.
func (p *peer) writeData(op *sendOp, hdr *[frameHeaderLen]byte) error {
	h, payload := op.hdr, op.payload
	if sc, ok := p.conn.(*shmConn); ok && op.remote && sc.sendsRemote(len(payload)) {
		return sc.writeRemote(h, payload, hdr, p.t.failed)
	}
	for {
		piece := payload
		if p.sums {
			piece = payload[:min(len(payload), wireFrame)]
			h.length, h.flags = uint32(len(piece)), op.hdr.flags
			if len(piece) < len(payload) {
				h.flags |= flagMore
			}
			h.crc = payloadChecksum(piece)
		}
		h.encode(hdr)
		bufs := net.Buffers{hdr[:], piece}
		if _, err := bufs.WriteTo(p.conn); err != nil {
			return err
		}
		if payload = payload[len(piece):]; len(payload) == 0 {
			return nil
		}
	}
}

// readLoop reads the peer's frames until the connection fails or the peer
// sends its last control message: heartbeats only prove it alive, data
// frames fill the receives the collectives post.
func (p *peer) readLoop() {
	defer close(p.readerDone)
	var hb [frameHeaderLen]byte
	var op *recvOp // the message being received
	for {
		h, ok := p.readHeader(&hb)
		if !ok {
			return
		}
		switch h.typ {
		case frameHeartbeat:
			continue
		case frameControl:
			p.readControl(&h)
			return
		case frameMessage:
			if !p.readMessage(&h) {
				return
			}
			continue
		}
		if op, ok = p.readData(&h, op); !ok {
			return
		}
	}
}

// readFull fills buf from the connection, as io.ReadFull does.
func (p *peer) readFull(buf []byte) error {
	if p.sock != nil {
		return p.sock.readFull(buf)
	}
	_, err := io.ReadFull(p.conn, buf)
	return err
}

// readHeader reads the next frame's header into hb, failing the
// communicator if it does not come within the peer timeout or is corrupt.
func (p *peer) readHeader(hb *[frameHeaderLen]byte) (h frameHeader, ok bool) {
	p.conn.SetReadDeadline(time.Now().Add(p.t.opt.PeerTimeout))
	if err := p.readFull(hb[:]); err != nil {
		p.readFailed(err)
		return h, false
	}
	h, err := decodeHeader(hb, maxDataPayload)
	if err != nil {
		p.t.fail(p.lost(err))
		return h, false
	}
	return h, true
}

// readControl reads the peer's last message, a goodbye or an abort, and acts
// on it.
func (p *peer) readControl(h *frameHeader) {
	if h.length > maxControlPayload {
		p.t.fail(p.lost(fmt.Errorf("%w: %d-byte control frame", ErrCorruptFrame, h.length)))
		return
	}
	buf := make([]byte, h.length)
	if err := p.readFull(buf); err != nil {
		p.readFailed(err)
		return
	}
	if err := checkPayload(h, buf); err != nil {
		p.t.fail(p.lost(err))
		return
	}
	var m control
	if err := json.Unmarshal(buf, &m); err != nil {
		p.t.fail(p.lost(fmt.Errorf("%w: control message: %v", ErrCorruptFrame, err)))
		return
	}
	switch m.Kind {
	case "bye":
		// Not a failure: the peer finished. Only calls that still
		// need it fail (see call.wait and inbox.take).
		close(p.gone)
		p.t.inbox.leave(p.rank)
	case "abort":
		switch {
		case m.Lost == p.rank && m.Relayed: // the peer's loss, as another rank declared it
			p.t.fail(p.lost(errors.New(m.Reason)))
		case m.Lost == p.rank || m.Lost < 0 || m.Lost >= p.t.size: // the peer's own failure
			p.t.fail(p.lost(abortError{m.Reason}))
		default: // another rank's, or this rank's as the peer saw it
			p.t.fail(&PeerError{Rank: m.Lost, Err: reportedError{by: p.rank, reason: m.Reason, aborted: m.Aborted}})
		}
	default:
		p.t.fail(p.lost(fmt.Errorf("%w: unexpected %q message", ErrCorruptFrame, m.Kind)))
	}
}

// readData reads the payload of data frame h into op, the message being
// received, or (op nil) into the next receive the local collective posts.
// It returns the message still being received after this frame: op, or nil
// once the frame completed it.
func (p *peer) readData(h *frameHeader, op *recvOp) (_ *recvOp, ok bool) {
	if op == nil {
		select {
		case op = <-p.recvq:
		case <-p.t.failed:
			return nil, false
		}
	}
	if h.seq != op.seq || h.site != op.site {
		p.t.fail(p.lost(fmt.Errorf("sent data for its collective call #%d (site tag %04x) while this rank is in call #%d (site tag %04x): ranks must call the same collectives in the same order", h.seq, h.site, op.seq, op.site)))
		return nil, false
	}
	if h.flags&flagRemote != 0 {
		switch p.readRemoteData(op) {
		case remoteFailed:
			return nil, false
		case remoteGaveUp: // not delivered: the writer's last frame or its end follows
			return op, true
		}
	} else if op.lend != nil {
		return p.lendData(h, op)
	} else {
		buf, err := op.next(int(h.length))
		if err != nil {
			p.t.fail(p.lost(err))
			return nil, false
		}
		p.conn.SetReadDeadline(time.Now().Add(p.t.opt.PeerTimeout))
		if err := p.readFull(buf); err != nil {
			p.readFailed(err)
			return nil, false
		}
		if err := p.checkData(h, buf); err != nil {
			p.t.fail(p.lost(err))
			return nil, false
		}
	}
	if h.flags&flagMore != 0 {
		return op, true
	}
	if op.grow == nil && op.n != len(op.dst) {
		p.t.fail(p.lost(fmt.Errorf("sent %d bytes where this rank expects %d (buffers of different lengths?)", op.n, len(op.dst))))
		return nil, false
	}
	op.done <- nil
	return nil, true
}

// readRemoteData reads the descriptor of a flagRemote frame and copies
// the data it describes from the peer's memory into op.
func (p *peer) readRemoteData(op *recvOp) remoteRead {
	sc, ok := p.conn.(*shmConn)
	if !ok || sc.remote == nil || op.lend != nil {
		p.t.fail(p.lost(fmt.Errorf("%w: a remote frame where this rank does not read the peer's memory", ErrCorruptFrame)))
		return remoteFailed
	}
	var d [remoteDescriptorLen]byte
	p.conn.SetReadDeadline(time.Now().Add(p.t.opt.PeerTimeout))
	if _, err := io.ReadFull(p.conn, d[:]); err != nil {
		p.readFailed(err)
		return remoteFailed
	}
	addr, n := binary.NativeEndian.Uint64(d[:]), binary.NativeEndian.Uint64(d[8:])
	if n > maxRemotePayload {
		p.t.fail(p.lost(fmt.Errorf("%w: remote frame of %d bytes exceeds the %d-byte limit", ErrCorruptFrame, n, maxRemotePayload)))
		return remoteFailed
	}
	// A link closed on this side (errShmClosedRemote) is not told apart:
	// links close only once the communicator has failed (shutdown), and
	// fail then keeps the first failure.
	err := sc.readRemoteFrame(int(n), addr, op.next)
	switch {
	case errors.Is(err, errRemoteGaveUp):
		return remoteGaveUp
	case err != nil:
		p.t.fail(p.lost(err))
		return remoteFailed
	}
	return remoteCopied
}

// remoteRead is how readRemoteData ended.
type remoteRead int

const (
	remoteCopied remoteRead = iota
	remoteFailed            // the communicator failed
	remoteGaveUp            // the writer gave the frame up (errRemoteGaveUp)
)

// checkData checks a data or message payload where the link carries sums.
func (p *peer) checkData(h *frameHeader, buf []byte) error {
	if !p.sums {
		return nil
	}
	return checkPayload(h, buf)
}

// writeFailed handles a write error: after the peer's goodbye it is
// expected (the peer has closed its end); otherwise it is a failure.
func (p *peer) writeFailed(err error) {
	select { // the reader may still be reading the goodbye
	case <-p.readerDone:
	case <-time.After(time.Second):
	}
	select {
	case <-p.gone:
	default:
		p.readFailed(err)
	}
}

// readFailed turns a connection error into the communicator's failure.
func (p *peer) readFailed(err error) {
	var ne net.Error
	switch {
	case errors.Is(err, net.ErrClosed): // closed on this side, not the peer's doing
		p.t.fail(&PeerError{Rank: p.t.rank, Err: errors.New("connections closed by this rank")})
		return
	case errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("lost: silent for %v (no data, no heartbeat)", p.t.opt.PeerTimeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("lost: connection closed")
	default:
		err = fmt.Errorf("lost: %w", err)
	}
	p.t.fail(p.lost(err))
}
