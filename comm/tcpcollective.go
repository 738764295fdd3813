package comm

import (
	"fmt"
	"time"
)

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
func (c *call) send(p int, data []byte) chan error { return c.sendFrom(p, data, false) }

// sendFrom is send that lets a shared-memory link's receiver copy large
// frames from this rank's memory (remote, see shmremote.go): only for
// receives that do not lend the ring.
func (c *call) sendFrom(p int, data []byte, remote bool) chan error {
	done := make(chan error, 1)
	frame := maxDataPayload
	if sc, ok := c.t.peers[p].conn.(*shmConn); ok && remote && sc.sendsRemote(len(data)) {
		frame = maxRemotePayload // one descriptor, one wake-up of each side
	}
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), frame)
		op := &sendOp{payload: data[:n], hdr: frameHeader{typ: frameData, site: c.tag, length: uint32(n), seq: c.seq}, remote: remote}
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
	return c.await(ch, p, what, nil, nil)
}

// await is wait that meanwhile passes whatever arrives on lent (nil:
// nothing) to take.
func (c *call) await(ch chan error, p int, what string, lent chan []byte, take func([]byte)) error {
	for {
		select {
		case piece := <-lent:
			take(piece)
		case err := <-ch:
			if err == nil {
				return nil
			}
			select {
			case <-c.t.peers[p].gone: // the send met the end the peer closed after its goodbye
				c.t.fail(c.t.peers[p].lost(fmt.Errorf("%w while this rank waited for it to %s in %s", errPeerClosed, what, c.site)))
			default:
				c.t.fail(c.t.peers[p].lost(err))
			}
			return c.t.Err()
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
			sends[p] = c.sendFrom(p, send[p], true)
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
				sends[p] = c.sendFrom(p, data, true)
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
			roundSends := len(sends)
			for s := range steps {
				a, b := chunk(s, true)
				if s == size-2 {
					// The all-gather receives into the chunks this round's
					// reduce-scatter sent. They arrive only after those sends
					// went out (their sums include them), but that order runs
					// through the network, where the race detector cannot see
					// it; waiting here states it.
					for _, done := range sends[roundSends:] {
						if err := c.wait(done, right, "accept our share"); err != nil {
							return err
						}
					}
					sends = sends[:roundSends]
				}
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

// pairWindow is how many segments two ranks on a shared-memory link keep
// in flight beyond the additions. Over TCP they keep as many as the
// scratch holds (pairScratchWindow): a deeper pipeline rides out the
// moments the peer is not scheduled, which on busy cores left each rank's
// reader waiting for data most of the call.
const (
	pairWindow        = 4
	pairScratchWindow = 2 * ringChunkValues / ringSegmentValues
)

// allReducePair is the all-reduce of two ranks: each sends its whole buffer
// and adds the other's as it arrives. That is one exchange instead of the
// ring's two dependent steps, with the same bytes; and since a + b = b + a
// exactly in floating point, it is the canonical sum.
func (t *TCP) allReducePair(c *call, data []float32) error {
	peer, n := 1-t.rank, len(data)
	segs := (n + ringSegmentValues - 1) / ringSegmentValues
	bounds := func(j int) (int, int) { return j * ringSegmentValues, min(n, (j+1)*ringSegmentValues) }
	// A shared-memory link lends the peer's segments where they lie: they
	// are added from its ring once ours has left, not copied out first.
	lend := t.peers[peer].canLend(4 * ringSegmentValues)
	window := pairScratchWindow
	if lend {
		window = pairWindow
	}
	var ops [pairScratchWindow]recvOp
	post := func(j int) {
		a, b := bounds(j)
		slot := j % window
		if lend {
			ops[slot] = lending(4 * (b - a))
		} else {
			ops[slot] = recvOp{dst: float32Bytes(t.scratch[slot*ringSegmentValues:][:b-a])}
		}
		c.post(peer, &ops[slot])
	}
	sends := make([]chan error, segs)
	// finish adds segment j of the peer's buffer into ours, once ours has
	// left (the peer must receive our own values), and posts the receive
	// window segments ahead into the freed scratch.
	finish := func(j int) error {
		slot := j % window
		a, b := bounds(j)
		if lend {
			if err := c.wait(sends[j], peer, "accept our share"); err != nil {
				return err
			}
			if err := c.take(&ops[slot], peer, "send its share", data[a:b], t.scratch); err != nil {
				return err
			}
		} else {
			if err := c.wait(ops[slot].done, peer, "send its share"); err != nil {
				return err
			}
			if err := c.wait(sends[j], peer, "accept our share"); err != nil {
				return err
			}
			addInto(data[a:b], t.scratch[slot*ringSegmentValues:][:b-a])
		}
		t.recvd[peer] += int64(4 * (b - a))
		if j+window < segs {
			post(j + window)
		}
		return nil
	}
	for j := range min(window, segs) {
		post(j)
	}
	// Sends run at most window segments ahead of the additions, so
	// neither rank can fill its queue while the other waits for a receive.
	for j := range segs {
		a, b := bounds(j)
		sends[j] = c.send(peer, float32Bytes(data[a:b]))
		t.sent[peer] += int64(4 * (b - a))
		if k := j - window + 1; k >= 0 {
			if err := finish(k); err != nil {
				return err
			}
		}
	}
	for k := max(0, segs-window+1); k < segs; k++ {
		if err := finish(k); err != nil {
			return err
		}
	}
	return nil
}
