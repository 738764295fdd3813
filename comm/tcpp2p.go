package comm

import (
	"fmt"
	"time"
)

// Send queues msg, prefixed with its site, in frames of at most
// maxDataPayload bytes to the peer's writer, and waits until they are
// written. The peer's reader stores point-to-point messages as they come,
// whatever its rank is doing, so the write completes unless the peer's
// reader is held by a collective's data that its rank has not asked for
// yet, and then within the call timeout at most.
func (t *TCP) Send(site string, to int, msg []byte) error {
	if err := checkPeer("Send", site, to, t.size, false); err != nil {
		return err
	}
	if err := checkSite(site); err != nil {
		return err
	}
	if err := t.Err(); err != nil {
		return err
	}
	start := time.Now()
	if to == t.rank {
		t.inbox.put(t.rank, site, append(make([]byte, 0, len(msg)), msg...))
		t.stats.recordPeer(site, t.rank, to, 0, 0, time.Since(start))
		return nil
	}
	p := t.peers[to]
	data := encodeMessage(site, msg)
	tag := siteTag(site)
	done := make(chan error, 1)
	timer := time.NewTimer(t.opt.CallTimeout)
	defer timer.Stop()
	p.sendMu.Lock()
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), maxDataPayload)
		op := &sendOp{payload: data[:n], hdr: frameHeader{typ: frameMessage, site: tag, length: uint32(n)}}
		if n < len(data) {
			op.hdr.flags = flagMore
		} else {
			op.done = done
		}
		data = data[n:]
		select {
		case p.sendq <- op:
		case <-p.gone:
			p.sendMu.Unlock()
			return p.lost(fmt.Errorf("%w before this rank sent it a message for %s", errPeerClosed, site))
		case <-t.failed:
			p.sendMu.Unlock()
			return t.err
		case <-timer.C:
			p.sendMu.Unlock()
			t.fail(p.lost(fmt.Errorf("did not accept a message for %s within %v", site, t.opt.CallTimeout)))
			return t.err
		}
	}
	p.sendMu.Unlock()
	select {
	case err := <-done:
		if err != nil {
			return p.lost(err) // the writer has failed the communicator
		}
	case <-p.gone:
		// The writer stops at the goodbye; the frames may have left before.
		<-p.writerDone
		select {
		case err := <-done:
			if err != nil {
				return p.lost(err)
			}
		default:
			return p.lost(fmt.Errorf("%w before this rank sent it a message for %s", errPeerClosed, site))
		}
	case <-t.failed:
		return t.err
	case <-timer.C:
		t.fail(p.lost(fmt.Errorf("did not accept a message for %s within %v", site, t.opt.CallTimeout)))
		return t.err
	}
	t.stats.recordPeer(site, t.rank, to, int64(len(msg)), 0, time.Since(start))
	return nil
}

// Recv waits for a message in the inbox the peers' readers fill.
func (t *TCP) Recv(site string, from int, deadline time.Time) (int, []byte, error) {
	if err := checkPeer("Recv", site, from, t.size, true); err != nil {
		return 0, nil, err
	}
	start := time.Now()
	m, err := t.inbox.recv(site, from, deadline, t.failed, func() error { return t.err })
	if err != nil {
		return 0, nil, err
	}
	t.stats.recordPeer(site, t.rank, m.from, 0, int64(len(m.data)), time.Since(start))
	return m.from, m.data, nil
}

// readMessage reads the payload of point-to-point frame h and, once the
// message is complete, stores it in the inbox.
func (p *peer) readMessage(h *frameHeader) bool {
	buf := make([]byte, h.length)
	p.conn.SetReadDeadline(time.Now().Add(p.t.opt.PeerTimeout))
	if err := p.readFull(buf); err != nil {
		p.readFailed(err)
		return false
	}
	if err := p.checkData(h, buf); err != nil {
		p.t.fail(p.lost(err))
		return false
	}
	if p.msg != nil || h.flags&flagMore != 0 {
		p.msg = append(p.msg, buf...)
		buf = p.msg
	}
	if h.flags&flagMore != 0 {
		return true
	}
	p.msg = nil
	site, msg, err := decodeMessage(buf)
	if err != nil {
		p.t.fail(p.lost(err))
		return false
	}
	p.t.inbox.put(p.rank, site, msg)
	return true
}

var _ Communicator = (*TCP)(nil)
