package comm

import (
	"fmt"
	"io"
	"net"
	"time"
	"unsafe"
)

// Lending: a receive that takes a shared-memory link's payload where it
// lies in the ring. The all-reduce of two ranks adds the peer's values
// straight from the ring into its buffer, rather than copying them out
// first and adding the copy: one pass over the bytes instead of two. A TCP
// link has no memory to lend; its receives copy, as before.
//
// The reader passes the payload to the collective in pieces of whole
// float32 values and waits for each to come back before it frees the room
// (discard) and reads on, holding the mapping meanwhile so that Close
// cannot unmap memory being added from.

// canLend reports whether the link to p can lend a message of n bytes
// while the ring also holds this rank's own message of that size: only
// then can a rank that adds a segment only after its own has been sent
// never wait on a peer that waits the same way (see allReducePair).
func (p *peer) canLend(n int) bool {
	sc, ok := p.conn.(*shmConn)
	return ok && len(sc.in.data) >= n+frameHeaderLen
}

// lendData lends the payload of data frame h to op's taker (op.lend set).
// It returns the message still being received after this frame, as
// readData does.
func (p *peer) lendData(h *frameHeader, op *recvOp) (_ *recvOp, ok bool) {
	sc := p.conn.(*shmConn)
	n := int(h.length)
	if n%4 != 0 || op.n+n > op.want {
		p.t.fail(p.lost(fmt.Errorf("sent %d bytes where this rank expects %d (buffers of different lengths?)", op.n+n, op.want)))
		return nil, false
	}
	sc.SetReadDeadline(time.Now().Add(p.t.opt.PeerTimeout))
	for left := n; left > 0; {
		if !sc.enter() {
			p.readFailed(net.ErrClosed)
			return nil, false
		}
		piece, err := sc.peek(left)
		if err == nil && len(piece) < 4 { // a value split by the ring's end, or not all written yet
			sc.mu.RUnlock()
			var v [4]byte
			if _, err := io.ReadFull(sc, v[:]); err != nil {
				p.readFailed(err)
				return nil, false
			}
			if !p.lend(op, v[:]) {
				return nil, false
			}
			left -= 4
			continue
		}
		if err != nil {
			sc.mu.RUnlock()
			p.readFailed(err)
			return nil, false
		}
		piece = piece[:len(piece)&^3]
		lent := p.lend(op, piece)
		if lent {
			sc.discard(len(piece))
		}
		sc.mu.RUnlock()
		if !lent {
			return nil, false
		}
		left -= len(piece)
	}
	op.n += n
	if h.flags&flagMore != 0 {
		return op, true
	}
	if op.n != op.want {
		p.t.fail(p.lost(fmt.Errorf("sent %d bytes where this rank expects %d (buffers of different lengths?)", op.n, op.want)))
		return nil, false
	}
	op.done <- nil
	return nil, true
}

// lend hands piece to op's taker and waits until the taker is done with
// it; false if the communicator failed, or the link was closed, before the
// taker took it. (The taker may be waiting for this rank's own send, whose
// Write cannot start while Close waits for this lend to let go of the
// mapping.)
func (p *peer) lend(op *recvOp, piece []byte) bool {
	select {
	case op.lend <- piece:
		<-op.back // a taker always gives its piece back
		return true
	case <-p.t.failed:
	case <-p.conn.(*shmConn).closed:
		p.readFailed(net.ErrClosed)
	}
	return false
}

// lending returns a receive of n bytes to be lent (see call.take).
func lending(n int) recvOp {
	return recvOp{lend: make(chan []byte), back: make(chan struct{}, 1), want: n}
}

// take waits for the lent receive op from peer p, as wait does, adding
// every piece into dst in turn; bounce is scratch for pieces that are not
// aligned as float32 values.
func (c *call) take(op *recvOp, p int, what string, dst, bounce []float32) error {
	at := 0
	return c.await(op.done, p, what, op.lend, func(piece []byte) {
		addBytes(dst[at:], piece, bounce)
		at += len(piece) / 4
		op.back <- struct{}{}
	})
}

// addBytes adds the float32 values held in src, in the machine's byte
// order, into dst.
func addBytes(dst []float32, src []byte, bounce []float32) {
	if len(src) == 0 {
		return
	}
	if p := unsafe.Pointer(unsafe.SliceData(src)); uintptr(p)%4 == 0 {
		addInto(dst[:len(src)/4], unsafe.Slice((*float32)(p), len(src)/4))
		return
	}
	for len(src) > 0 {
		n := min(len(bounce), len(src)/4)
		copy(float32Bytes(bounce[:n]), src)
		addInto(dst[:n], bounce[:n])
		dst, src = dst[n:], src[4*n:]
	}
}
