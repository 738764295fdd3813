package comm

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"sync"
	"time"
)

// Options configures a TCP communicator (see Connect).
type Options struct {
	Rank, Size int
	// Rendezvous is rank 0's "host:port": rank 0 listens there, the others
	// connect to it to learn each other's addresses.
	Rendezvous string
	// Listener, if set, is used by rank 0 instead of listening on
	// Rendezvous (for launchers and tests that open the port themselves).
	Listener net.Listener
	// Listen is where this rank accepts its peers ("host:port"; port 0
	// picks a free one). Default for rank 0: Rendezvous; for the others:
	// the local address of their connection to rank 0 (the interface rank
	// 0 is reachable through), port 0. Nothing listens anywhere else.
	Listen string
	// Secret is the job secret every connection proves it knows. Required.
	Secret []byte
	// TLS, if set, encrypts every connection (see TLSConfig); the secret
	// is still checked inside it.
	TLS *tls.Config

	// StartTimeout bounds the rendezvous and mesh formation (default 60 s).
	StartTimeout time.Duration
	// PeerTimeout is how long a silent peer is trusted: a peer that sends
	// nothing, not even a heartbeat, for this long is declared lost
	// (default 6 s).
	PeerTimeout time.Duration
	// HeartbeatInterval is how often an idle connection sends a heartbeat
	// (default 1 s; keep it well under PeerTimeout).
	HeartbeatInterval time.Duration
	// CallTimeout bounds one collective call, including the time the
	// slowest rank takes to reach it (default 30 min).
	CallTimeout time.Duration
	// Logf receives refused connections and lost peers (default: log.Printf).
	Logf func(format string, args ...any)
}

func (o *Options) setDefaults() {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.PeerTimeout <= 0 {
		o.PeerTimeout = 6 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = min(time.Second, o.PeerTimeout/4)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
}

// PeerError reports that the communicator failed because of one peer: it
// was lost (connection closed, silent past the timeout, corrupt data), it
// aborted, or it did not reach a collective in time. Once a communicator has
// failed, every call returns the same error.
type PeerError struct {
	Rank int
	Err  error
}

func (e *PeerError) Error() string { return fmt.Sprintf("comm: rank %d: %v", e.Rank, e.Err) }
func (e *PeerError) Unwrap() error { return e.Err }

// ErrClosed is returned by calls on a communicator after Close.
var ErrClosed = errors.New("comm: communicator closed")

// errPeerClosed is a peer's Close seen from the other side.
var errPeerClosed = errors.New("closed its communicator")

// TCP is a Communicator over a full mesh of TCP connections, one per pair
// of ranks. Its methods must be called from one goroutine at a time.
type TCP struct {
	opt   Options
	rank  int
	size  int
	peers []*peer // nil at rank
	stats *Stats

	mu      sync.Mutex // serialises collectives
	seq     uint32
	scratch []float32
	sent    []int64
	recvd   []int64

	failOnce sync.Once
	failed   chan struct{}
	err      error

	closeOnce sync.Once
}

func newTCP(opt Options, conns []net.Conn) *TCP {
	t := &TCP{opt: opt, rank: opt.Rank, size: opt.Size, stats: newStats(opt.Size),
		failed: make(chan struct{}), sent: make([]int64, opt.Size), recvd: make([]int64, opt.Size)}
	t.peers = make([]*peer, opt.Size)
	for r, c := range conns {
		if c == nil {
			continue
		}
		c.SetDeadline(time.Time{})
		t.peers[r] = &peer{t: t, rank: r, conn: c, sendq: make(chan *sendOp, 64), recvq: make(chan *recvOp, 2*ringChunkValues/ringSegmentValues+2),
			ctrl: make(chan []byte, 1), gone: make(chan struct{}), writerDone: make(chan struct{}), readerDone: make(chan struct{})}
	}
	for _, p := range t.peers {
		if p != nil {
			go p.writeLoop()
			go p.readLoop()
		}
	}
	return t
}

func (t *TCP) Rank() int     { return t.rank }
func (t *TCP) Size() int     { return t.size }
func (t *TCP) Stats() *Stats { return t.stats }

// Err returns why the communicator failed, or nil.
func (t *TCP) Err() error {
	select {
	case <-t.failed:
		return t.err
	default:
		return nil
	}
}

// Abort fails the communicator with err and tells every peer, so that their
// calls return an error naming this rank instead of waiting for it.
func (t *TCP) Abort(err error) {
	if err == nil {
		err = ErrAborted
	}
	t.fail(&PeerError{Rank: t.rank, Err: fmt.Errorf("aborted: %w", err)})
}

// Close tells the peers this rank is done and closes every connection. It
// waits at most a second for the goodbyes to be written.
func (t *TCP) Close() error {
	t.closeOnce.Do(func() {
		t.failOnce.Do(func() {
			t.err = ErrClosed
			bye, _ := json.Marshal(control{Kind: "bye", Rank: t.rank})
			frame := appendFrame(nil, frameControl, 0, 0, 0, bye)
			for _, p := range t.peers {
				if p != nil {
					p.ctrl <- frame
				}
			}
			close(t.failed) // after queueing: writers check ctrl once failed is closed
		})
		t.shutdown()
	})
	return nil
}

// fail records the first failure, tells the peers who was lost, and closes
// the connections.
func (t *TCP) fail(err error) {
	t.failOnce.Do(func() {
		t.err = err
		lost := t.rank
		var pe *PeerError
		if errors.As(err, &pe) {
			lost = pe.Rank
		}
		if !errors.Is(err, errPeerClosed) {
			t.opt.Logf("comm: rank %d: %v", t.rank, err)
		}
		msg, _ := json.Marshal(control{Kind: "abort", Rank: t.rank, Lost: lost, Reason: err.Error()})
		frame := appendFrame(nil, frameControl, 0, 0, 0, msg)
		for _, p := range t.peers {
			if p != nil && p.rank != lost {
				p.ctrl <- frame
			}
		}
		close(t.failed)
		go t.closeOnce.Do(t.shutdown)
	})
}

// shutdown lets the writers send their last control frame, then closes the
// connections and waits for every goroutine.
func (t *TCP) shutdown() {
	grace := time.NewTimer(time.Second)
	defer grace.Stop()
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		select {
		case <-p.writerDone:
		case <-grace.C:
			grace.Reset(0)
		}
	}
	for _, p := range t.peers {
		if p != nil {
			p.conn.Close()
		}
	}
	for _, p := range t.peers {
		if p != nil {
			<-p.writerDone
			<-p.readerDone
		}
	}
}

// control is a rendezvous or shutdown message, sent as JSON in a control
// frame (only after authentication).
type control struct {
	Kind   string   `json:"kind"` // join, mesh, table, ready, start, error, abort, bye
	Rank   int      `json:"rank"`
	Size   int      `json:"size,omitempty"`
	Addr   string   `json:"addr,omitempty"`
	Order  string   `json:"order,omitempty"`
	Addrs  []string `json:"addrs,omitempty"`
	Lost   int      `json:"lost,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// sendOp is one data frame to write. The writer fills in the payload's
// checksum, so the calling collective does not spend its time on it.
type sendOp struct {
	hdr     frameHeader
	payload []byte
	done    chan error // nil when nobody waits for this frame
}

// recvOp says where the next data message from a peer goes: into dst
// (exactly len(dst) bytes) or, when grow is set, appended to *grow.
type recvOp struct {
	seq  uint32
	site uint16
	dst  []byte
	grow *[]byte
	n    int
	done chan error
}

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
			op.hdr.crc = payloadChecksum(op.payload)
			op.hdr.encode(&hdr)
			bufs := net.Buffers{hdr[:], op.payload}
			_, err := bufs.WriteTo(p.conn)
			if op.done != nil {
				op.done <- err
			}
			if err != nil {
				p.writeFailed(fmt.Errorf("sending: %w", err))
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
			// fail queues the control frame before closing failed.
			select {
			case frame := <-p.ctrl:
				p.conn.SetWriteDeadline(time.Now().Add(time.Second))
				p.conn.Write(frame)
			default:
			}
			return
		}
	}
}

func (p *peer) readLoop() {
	defer close(p.readerDone)
	o := &p.t.opt
	var hb [frameHeaderLen]byte
	var ctrlBuf []byte
	var op *recvOp // the message being received
	for {
		p.conn.SetReadDeadline(time.Now().Add(o.PeerTimeout))
		if _, err := io.ReadFull(p.conn, hb[:]); err != nil {
			p.readFailed(err)
			return
		}
		h, err := decodeHeader(&hb, maxDataPayload)
		if err != nil {
			p.t.fail(p.lost(err))
			return
		}
		switch h.typ {
		case frameHeartbeat:
			continue
		case frameControl:
			if h.length > maxControlPayload {
				p.t.fail(p.lost(fmt.Errorf("%w: %d-byte control frame", ErrCorruptFrame, h.length)))
				return
			}
			ctrlBuf = slices.Grow(ctrlBuf[:0], int(h.length))[:h.length]
			if _, err := io.ReadFull(p.conn, ctrlBuf); err != nil {
				p.readFailed(err)
				return
			}
			if err := checkPayload(&h, ctrlBuf); err != nil {
				p.t.fail(p.lost(err))
				return
			}
			var m control
			if err := json.Unmarshal(ctrlBuf, &m); err != nil {
				p.t.fail(p.lost(fmt.Errorf("%w: control message: %v", ErrCorruptFrame, err)))
				return
			}
			switch m.Kind {
			case "bye":
				// Not a failure: the peer finished. Only calls that still
				// need it fail (see call.wait).
				close(p.gone)
			case "abort":
				if m.Lost == p.rank || m.Lost < 0 || m.Lost >= p.t.size {
					p.t.fail(p.lost(fmt.Errorf("%s", m.Reason)))
				} else {
					p.t.fail(&PeerError{Rank: m.Lost, Err: fmt.Errorf("reported by rank %d: %s", p.rank, m.Reason)})
				}
			default:
				p.t.fail(p.lost(fmt.Errorf("%w: unexpected %q message", ErrCorruptFrame, m.Kind)))
			}
			return
		}
		// A data frame: wait until the local collective says where it goes.
		if op == nil {
			select {
			case op = <-p.recvq:
			case <-p.t.failed:
				return
			}
		}
		if h.seq != op.seq || h.site != op.site {
			p.t.fail(p.lost(fmt.Errorf("sent data for its collective call #%d (site tag %04x) while this rank is in call #%d (site tag %04x): ranks must call the same collectives in the same order", h.seq, h.site, op.seq, op.site)))
			return
		}
		var buf []byte
		n := int(h.length)
		if op.grow != nil {
			b := slices.Grow(*op.grow, n)
			*op.grow = b[:len(b)+n]
			buf = b[len(b) : len(b)+n]
		} else {
			if op.n+n > len(op.dst) {
				p.t.fail(p.lost(fmt.Errorf("sent more than the %d bytes this rank expects (buffers of different lengths?)", len(op.dst))))
				return
			}
			buf = op.dst[op.n : op.n+n]
		}
		op.n += n
		p.conn.SetReadDeadline(time.Now().Add(o.PeerTimeout))
		if _, err := io.ReadFull(p.conn, buf); err != nil {
			p.readFailed(err)
			return
		}
		if err := checkPayload(&h, buf); err != nil {
			p.t.fail(p.lost(err))
			return
		}
		if h.flags&flagMore != 0 {
			continue
		}
		if op.grow == nil && op.n != len(op.dst) {
			p.t.fail(p.lost(fmt.Errorf("sent %d bytes where this rank expects %d (buffers of different lengths?)", op.n, len(op.dst))))
			return
		}
		op.done <- nil
		op = nil
	}
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

// call is the state of one collective call on this rank.
type call struct {
	t     *TCP
	site  string
	tag   uint16
	seq   uint32
	timer *time.Timer
}

func (t *TCP) begin(site string) (*call, error) {
	t.mu.Lock()
	if err := t.Err(); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	t.seq++
	clear(t.sent)
	clear(t.recvd)
	return &call{t: t, site: site, tag: siteTag(site), seq: t.seq, timer: time.NewTimer(t.opt.CallTimeout)}, nil
}

func (c *call) end() {
	c.timer.Stop()
	c.t.mu.Unlock()
}

// post says where the next message from peer p goes.
func (c *call) post(p int, op *recvOp) {
	op.seq, op.site, op.done = c.seq, c.tag, make(chan error, 1)
	if op.grow != nil {
		*op.grow = (*op.grow)[:0]
	}
	select {
	case c.t.peers[p].recvq <- op: // room: every earlier op of p has completed
	case <-c.t.failed:
		op.done <- c.t.err
	}
}

// send queues data for peer p in frames of at most maxDataPayload bytes and
// returns a channel that reports when the last one has been written.
func (c *call) send(p int, data []byte) chan error {
	done := make(chan error, 1)
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), maxDataPayload)
		op := &sendOp{payload: data[:n], hdr: frameHeader{typ: frameData, site: c.tag, length: uint32(n), seq: c.seq}}
		if n < len(data) {
			op.hdr.flags = flagMore
		} else {
			op.done = done
		}
		data = data[n:]
		select {
		case c.t.peers[p].sendq <- op:
		case <-c.t.peers[p].gone:
			return done // wait reports it
		case <-c.t.failed:
			done <- c.t.err
			return done
		}
	}
	return done
}

// wait waits for ch, failing the communicator (naming peer p) if the call
// deadline passes first.
func (c *call) wait(ch chan error, p int, what string) error {
	select {
	case err := <-ch:
		if err != nil {
			c.t.fail(c.t.peers[p].lost(err))
			return c.t.Err()
		}
		return nil
	case <-c.t.peers[p].gone:
		// Receives complete before the reader sees the goodbye; a send may
		// have been read by the peer before our writer returned from the
		// write, so let the writer finish first.
		<-c.t.peers[p].writerDone
		select {
		case err := <-ch: // completed before the goodbye
			if err == nil {
				return nil
			}
		default:
		}
		c.t.fail(c.t.peers[p].lost(fmt.Errorf("%w while this rank waited for it to %s in %s", errPeerClosed, what, c.site)))
		return c.t.err
	case <-c.t.failed:
		return c.t.err
	case <-c.timer.C:
		c.t.fail(&PeerError{Rank: p, Err: fmt.Errorf("did not %s in %s within %v", what, c.site, c.t.opt.CallTimeout)})
		return c.t.err
	}
}

func (t *TCP) AllToAll(site string, send, recv [][]byte) error {
	if len(send) != t.size || len(recv) != t.size {
		return fmt.Errorf("comm: AllToAll(%s): %d send and %d receive buffers for %d ranks", site, len(send), len(recv), t.size)
	}
	start := time.Now()
	c, err := t.begin(site)
	if err != nil {
		return err
	}
	defer c.end()
	if err := t.exchange(c, send, recv); err != nil {
		return err
	}
	t.stats.record(site, t.rank, t.sent, t.recvd, time.Since(start))
	return nil
}

// exchange sends send[p] to every peer p and receives recv[p] from it, all
// peers at once (each connection has its own writer and reader).
func (t *TCP) exchange(c *call, send, recv [][]byte) error {
	ops := make([]recvOp, t.size)
	for p := range t.size {
		if p != t.rank {
			ops[p].grow = &recv[p]
			c.post(p, &ops[p])
		}
	}
	sends := make([]chan error, t.size)
	for p := range t.size {
		if p != t.rank {
			sends[p] = c.send(p, send[p])
		}
	}
	recv[t.rank] = append(recv[t.rank][:0], send[t.rank]...)
	for p := range t.size {
		if p == t.rank {
			continue
		}
		if err := c.wait(ops[p].done, p, "send its data"); err != nil {
			return err
		}
		t.recvd[p] = int64(len(recv[p]))
	}
	for p := range t.size {
		if p == t.rank {
			continue
		}
		if err := c.wait(sends[p], p, "accept our data"); err != nil {
			return err
		}
		t.sent[p] = int64(len(send[p]))
	}
	return nil
}

func (t *TCP) Broadcast(site string, root int, data []byte) error {
	if err := checkRoot(root, t.size); err != nil {
		return err
	}
	start := time.Now()
	c, err := t.begin(site)
	if err != nil {
		return err
	}
	defer c.end()
	if t.rank == root {
		sends := make([]chan error, t.size)
		for p := range t.size {
			if p != root {
				sends[p] = c.send(p, data)
			}
		}
		for p := range t.size {
			if p != root {
				if err := c.wait(sends[p], p, "accept the broadcast"); err != nil {
					return err
				}
				t.sent[p] = int64(len(data))
			}
		}
	} else {
		op := &recvOp{dst: data}
		c.post(root, op)
		if err := c.wait(op.done, root, "broadcast"); err != nil {
			return err
		}
		t.recvd[root] = int64(len(data))
	}
	t.stats.record(site, t.rank, t.sent, t.recvd, time.Since(start))
	return nil
}

func (t *TCP) Barrier(site string) error {
	start := time.Now()
	c, err := t.begin(site)
	if err != nil {
		return err
	}
	defer c.end()
	empty := make([][]byte, t.size)
	if err := t.exchange(c, empty, make([][]byte, t.size)); err != nil {
		return err
	}
	t.stats.record(site, t.rank, nil, nil, time.Since(start))
	return nil
}

// ringSegmentValues is the pipelining grain of the ring: a chunk travels as
// segments of this many values, so adding one segment overlaps receiving
// the next, and a finished segment moves on before its chunk is complete.
const ringSegmentValues = 1 << 18 // 1 MiB

// AllReduce runs a ring: reduce-scatter then all-gather, in rounds of at
// most ringChunkValues values per chunk, accumulating in the canonical
// order (ring.go). Each chunk is pipelined in segments; the order in which
// each value is summed does not depend on the segmentation. Two ranks swap
// their buffers instead (allReducePair).
func (t *TCP) AllReduce(site string, data []float32) error {
	start := time.Now()
	c, err := t.begin(site)
	if err != nil {
		return err
	}
	defer c.end()
	n, size, r := len(data), t.size, t.rank
	if size > 1 && n == 0 {
		// Still talk: a peer with a non-empty buffer then gets a length
		// error at once instead of waiting for the call timeout.
		empty := make([][]byte, size)
		if err := t.exchange(c, empty, make([][]byte, size)); err != nil {
			return err
		}
	}
	if size > 1 && n > 0 && t.scratch == nil {
		t.scratch = make([]float32, 2*ringChunkValues)
	}
	if size == 2 && n > 0 {
		if err := t.allReducePair(c, data); err != nil {
			return err
		}
	} else if size > 1 && n > 0 {
		left, right := (r+size-1)%size, (r+1)%size
		mod := func(k int) int { return ((k % size) + size) % size }
		steps := 2 * (size - 1) // reduce-scatter steps, then all-gather steps
		var sends []chan error
		for lo := 0; lo < n; {
			hi := ringRound(lo, n, size)
			// At step s, this rank sends chunk sendChunk(s) and receives
			// recvChunk(s); the chunk it sends at step s+1 is the one it
			// received (and, while reducing, added to) at step s.
			chunk := func(s int, recv bool) (int, int) {
				k := r - s // reduce-scatter sends chunk r−s
				if s >= size-1 {
					k = r + 1 - (s - (size - 1)) // all-gather sends chunk r+1−s'
				}
				if recv {
					k--
				}
				return ringChunk(lo, hi, mod(k), size)
			}
			segments := func(a, b int) int { return max(1, (b-a+ringSegmentValues-1)/ringSegmentValues) }
			seg := func(a, b, j int) (int, int) { return a + j*ringSegmentValues, min(b, a+(j+1)*ringSegmentValues) }
			// dst is where segment j of step s's receive goes: scratch while
			// reducing (two halves, alternating by step), the data after.
			ops := make([][]recvOp, steps)
			post := func(s int) {
				a, b := chunk(s, true)
				ops[s] = make([]recvOp, segments(a, b))
				for j := range ops[s] {
					sa, sb := seg(a, b, j)
					if s < size-1 {
						off := (s % 2) * ringChunkValues
						ops[s][j].dst = float32Bytes(t.scratch[off+sa-a : off+sb-a])
					} else {
						ops[s][j].dst = float32Bytes(data[sa:sb])
					}
				}
			}
			sendSeg := func(s, j int) {
				a, b := chunk(s, false)
				sa, sb := seg(a, b, j)
				sends = append(sends, c.send(right, float32Bytes(data[sa:sb])))
				t.sent[right] += int64(4 * (sb - sa))
			}
			post(0)
			for j := range ops[0] {
				c.post(left, &ops[0][j])
			}
			a0, b0 := chunk(0, false)
			for j := range segments(a0, b0) {
				sendSeg(0, j)
			}
			for s := range steps {
				a, b := chunk(s, true)
				if s+1 < steps {
					post(s + 1)
				}
				for j := range ops[s] {
					if err := c.wait(ops[s][j].done, left, "send its share"); err != nil {
						return err
					}
					sa, sb := seg(a, b, j)
					t.recvd[left] += int64(4 * (sb - sa))
					if s < size-1 {
						off := (s % 2) * ringChunkValues
						addInto(data[sa:sb], t.scratch[off+sa-a:off+sb-a])
					}
					if s+1 < steps {
						// Step s+1 sends the chunk received at step s,
						// segment for segment; the chunk it receives may
						// have one value more or less, so its segments are
						// posted as far as they go here and the rest below.
						if j < len(ops[s+1]) {
							c.post(left, &ops[s+1][j])
						}
						sendSeg(s+1, j)
					}
				}
				if s+1 < steps {
					for j := len(ops[s]); j < len(ops[s+1]); j++ {
						c.post(left, &ops[s+1][j])
					}
				}
			}
			lo = hi
		}
		// Sends read rounds this rank no longer writes, so only the call's
		// end waits for them: the next round starts while they drain.
		for _, done := range sends {
			if err := c.wait(done, right, "accept our share"); err != nil {
				return err
			}
		}
	}
	t.stats.record(site, t.rank, t.sent, t.recvd, time.Since(start))
	return nil
}

// pairWindow is how many segments two ranks keep in flight beyond the
// additions (each one ringSegmentValues of scratch).
const pairWindow = 4

// allReducePair is the all-reduce of two ranks: each sends its whole buffer
// and adds the other's as it arrives. That is one exchange instead of the
// ring's two dependent steps, with the same bytes; and since a + b = b + a
// exactly in floating point, it is the canonical sum.
func (t *TCP) allReducePair(c *call, data []float32) error {
	peer, n := 1-t.rank, len(data)
	segs := (n + ringSegmentValues - 1) / ringSegmentValues
	bounds := func(j int) (int, int) { return j * ringSegmentValues, min(n, (j+1)*ringSegmentValues) }
	var ops [pairWindow]recvOp
	post := func(j int) {
		a, b := bounds(j)
		slot := j % pairWindow
		ops[slot] = recvOp{dst: float32Bytes(t.scratch[slot*ringSegmentValues:][:b-a])}
		c.post(peer, &ops[slot])
	}
	sends := make([]chan error, segs)
	// finish adds segment j of the peer's buffer into ours, once ours has
	// left (the peer must receive our own values), and posts the receive
	// pairWindow segments ahead into the freed scratch.
	finish := func(j int) error {
		slot := j % pairWindow
		if err := c.wait(ops[slot].done, peer, "send its share"); err != nil {
			return err
		}
		if err := c.wait(sends[j], peer, "accept our share"); err != nil {
			return err
		}
		a, b := bounds(j)
		addInto(data[a:b], t.scratch[slot*ringSegmentValues:][:b-a])
		t.recvd[peer] += int64(4 * (b - a))
		if j+pairWindow < segs {
			post(j + pairWindow)
		}
		return nil
	}
	for j := range min(pairWindow, segs) {
		post(j)
	}
	// Sends run at most pairWindow segments ahead of the additions, so
	// neither rank can fill its queue while the other waits for a receive.
	for j := range segs {
		a, b := bounds(j)
		sends[j] = c.send(peer, float32Bytes(data[a:b]))
		t.sent[peer] += int64(4 * (b - a))
		if k := j - pairWindow + 1; k >= 0 {
			if err := finish(k); err != nil {
				return err
			}
		}
	}
	for k := max(0, segs-pairWindow+1); k < segs; k++ {
		if err := finish(k); err != nil {
			return err
		}
	}
	return nil
}

var _ Communicator = (*TCP)(nil)
