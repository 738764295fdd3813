package comm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/graft-gnn/graft/internal/hugepage"
)

// Group is a set of in-process ranks that talk through channels: one
// goroutine per worker, the same collectives as a network transport.
type Group struct {
	size  int
	mail  [][]chan offer    // mail[src][dst]: what src offers dst
	acks  [][]chan struct{} // acks[src][dst]: dst has copied src's buffer
	comms []*local

	abortOnce sync.Once
	aborted   chan struct{}
	abortErr  error

	barrierMu    sync.Mutex
	barrierCount int
	barrierDone  chan struct{}
	barrierAt    barrierTag // the collective of the barrier's first rank

	reduceSlots [][]float32 // each rank's AllReduce input, posted before the first barrier
	reduceSum   []float32

	callsMu sync.Mutex
	calls   []callState // the collective each rank is in, for the watchdog

	inboxes []*inbox // each rank's point-to-point messages (p2p.go)

	sharedMu sync.Mutex
	shared   map[string]*sharedBuf // Share's buffers, by site
}

// sharedBuf is a Share buffer and its holders: those of each rank that got
// it from Share and have not given it back (Unshare).
type sharedBuf struct {
	buf   []float32
	holds map[rankHolder]bool
}

type rankHolder struct {
	rank int
	h    Holder
}

// callState is the collective a rank is in (kind "" outside one) and since
// when.
type callState struct {
	kind, site string
	since      time.Time
}

// DefaultDeadline is how long a rank of a group that Run starts may wait in
// one collective before the watchdog aborts the group (Watch).
const DefaultDeadline = 5 * time.Minute

// NewGroup returns a group of size in-process ranks.
func NewGroup(size int) *Group {
	if size < 1 {
		panic(fmt.Sprintf("comm: group size %d", size))
	}
	g := &Group{size: size, aborted: make(chan struct{}), barrierDone: make(chan struct{}),
		reduceSlots: make([][]float32, size), calls: make([]callState, size)}
	g.mail = make([][]chan offer, size)
	g.acks = make([][]chan struct{}, size)
	for s := range size {
		g.mail[s] = make([]chan offer, size)
		g.acks[s] = make([]chan struct{}, size)
		for d := range size {
			g.mail[s][d] = make(chan offer, 1)
			g.acks[s][d] = make(chan struct{}, 1)
		}
	}
	for r := range size {
		g.comms = append(g.comms, &local{g: g, rank: r, stats: newStats(size)})
		g.inboxes = append(g.inboxes, newInbox(r, size))
	}
	return g
}

// Comm returns rank's communicator.
func (g *Group) Comm(rank int) Communicator { return g.comms[rank] }

// Abort makes every blocked and future collective return an error wrapping
// err (ErrAborted when err is nil). A worker that fails calls it so that its
// peers stop instead of waiting for it forever.
func (g *Group) Abort(err error) {
	g.abortOnce.Do(func() {
		if err == nil {
			err = ErrAborted
		}
		g.abortErr = fmt.Errorf("%w: %w", ErrAborted, err)
		close(g.aborted)
	})
}

func (g *Group) err() error { return g.abortErr }

// enter records that rank is in a collective, and leave that it has left.
func (g *Group) enter(rank int, kind, site string) {
	g.callsMu.Lock()
	g.calls[rank] = callState{kind: kind, site: site, since: time.Now()}
	g.callsMu.Unlock()
}

func (g *Group) leave(rank int) {
	g.callsMu.Lock()
	g.calls[rank].kind = ""
	g.callsMu.Unlock()
}

// Watch starts the group's watchdog: once a rank has waited in one
// collective for longer than deadline, it aborts the group with an error
// that says which ranks are in which collective (ranks that call different
// collectives, or one that never comes, would otherwise wait forever).
// stop ends the watchdog.
func (g *Group) Watch(deadline time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(max(deadline/8, time.Millisecond), time.Second))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-g.aborted:
				return
			case now := <-tick.C:
				if err := g.overdue(now, deadline); err != nil {
					g.Abort(err)
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// overdue describes where every rank is if one has been in its collective
// for longer than deadline, and returns nil otherwise.
func (g *Group) overdue(now time.Time, deadline time.Duration) error {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	late := -1
	for r, c := range g.calls {
		if c.kind != "" && now.Sub(c.since) > deadline {
			late = r
			break
		}
	}
	if late < 0 {
		return nil
	}
	var order []string // each collective in order of its first rank
	ranks := map[string][]int{}
	for r, c := range g.calls {
		where := "no collective"
		if c.kind != "" {
			where = c.kind + "(" + c.site + ")"
		}
		if ranks[where] == nil {
			order = append(order, where)
		}
		ranks[where] = append(ranks[where], r)
	}
	parts := make([]string, len(order))
	for i, where := range order {
		parts[i] = rankList(ranks[where]) + " in " + where
	}
	c := g.calls[late]
	return fmt.Errorf("comm: rank %d waited more than %v in %s(%s): %s", late, deadline, c.kind, c.site, strings.Join(parts, "; "))
}

// offer is a message a rank offers a peer in the collective kind(site):
// buf, or, with rows set, the rows at of buf, each size bytes.
// With pull set, the message is n rows of size bytes that pull writes
// as the receiver reads them (AllToAllPull).
type offer struct {
	kind string
	site string
	buf  []byte
	rows bool
	size int
	at   []int32
	pull func(lo, hi int, dst []byte)
	n    int

	// guard and gen keep a receiver from reading buf once the sender's
	// call has returned (offerGuard); nil for pull, which has its own.
	guard *offerGuard
	gen   uint64
}

// offerGuard is a rank's guard of the buffers its offers point to: a
// receiver reads an offer of generation gen under the read lock, and only
// while gen is the guard's; the sender, returning from its call, takes the
// write lock, waiting for the reads under way, and moves to the next
// generation, so a peer still holding an offer (the call ended on an
// abort, or on an error of its own) reads nothing of buffers the caller is
// then free to reuse.
type offerGuard struct {
	mu  sync.RWMutex
	gen uint64
}

// close ends the current generation's reads, waiting for those under way.
func (g *offerGuard) close() {
	g.mu.Lock()
	g.gen++
	g.mu.Unlock()
}

// take hands o to deliver unless o's sender has returned from the call it
// offered o in, and returns what deliver returns and whether it ran.
func take(p int, o offer, deliver func(p int, o offer) int) (int, bool) {
	if gd := o.guard; gd != nil {
		gd.mu.RLock()
		defer gd.mu.RUnlock()
		if gd.gen != o.gen {
			return 0, false
		}
	}
	return deliver(p, o), true
}

// gone is the error of a rank that finds src's offer stale: src left the
// collective kind(site) before dst read its message.
func (g *Group) gone(src, dst int, kind, site string) error {
	if err := g.err(); err != nil {
		return err
	}
	return fmt.Errorf("comm: rank %d is in %s(%s), but rank %d's call ended before it read its message", dst, kind, site, src)
}

// len is the message's size in bytes.
func (o offer) len() int {
	switch {
	case o.rows:
		return len(o.at) * o.size
	case o.pull != nil:
		return o.n * o.size
	}
	return len(o.buf)
}

// appendTo appends the message to dst.
func (o offer) appendTo(dst []byte) []byte {
	if !o.rows {
		return append(dst, o.buf...)
	}
	dst = slices.Grow(dst, o.len())
	for _, i := range o.at {
		dst = append(dst, o.buf[int(i)*o.size:(int(i)+1)*o.size]...)
	}
	return dst
}

// receive takes src's offer to dst, which is in the collective
// kind(site). A message that has already arrived is delivered even after an
// abort: the peer that sent it completed its part, and dropping it would
// fail a call that can finish.
func (g *Group) receive(src, dst int, kind, site string) (o offer, err error) {
	select {
	case o = <-g.mail[src][dst]:
	default:
		select {
		case o = <-g.mail[src][dst]:
		case <-g.aborted:
			return offer{}, g.err()
		}
	}
	if o.kind != kind || o.site != site {
		return offer{}, fmt.Errorf("comm: rank %d is in %s(%s), but rank %d sent it data for %s(%s): ranks must call the same collectives in the same order",
			dst, kind, site, src, o.kind, o.site)
	}
	return o, nil
}

// post offers o from src to dst. The mailbox holds one offer, and dst has
// taken the previous one unless the ranks call different collectives, in
// which case only an abort ends the wait.
func (g *Group) post(src, dst int, o offer) error {
	select {
	case g.mail[src][dst] <- o:
		return nil
	case <-g.aborted:
		return g.err()
	}
}

// ack tells src that dst has copied its offer.
func (g *Group) ack(src, dst int) {
	select {
	case g.acks[src][dst] <- struct{}{}:
	case <-g.aborted:
	}
}

// barrierTag is the collective kind(site) a rank meets the others at a
// barrier in, and the rank.
type barrierTag struct {
	kind, site string
	rank       int
}

// barrier blocks until every rank has called it, or the group is aborted.
// Every rank must call it in the same collective kind(site): a rank that
// comes from another one than the rank that came first aborts the group
// with an error naming both (a collective that is a barrier alone would
// otherwise pass with ranks in different ones).
func (g *Group) barrier(rank int, kind, site string) error {
	g.barrierMu.Lock()
	done := g.barrierDone
	if g.barrierCount == 0 {
		g.barrierAt = barrierTag{kind, site, rank}
	} else if at := g.barrierAt; at.kind != kind || at.site != site {
		g.barrierMu.Unlock()
		err := fmt.Errorf("comm: rank %d is in %s(%s), but rank %d is in %s(%s): ranks must call the same collectives in the same order",
			rank, kind, site, at.rank, at.kind, at.site)
		g.Abort(err)
		return err
	}
	g.barrierCount++
	if g.barrierCount == g.size {
		g.barrierCount = 0
		g.barrierDone = make(chan struct{})
		close(done)
	}
	g.barrierMu.Unlock()
	select {
	case <-done:
		return nil
	case <-g.aborted:
		return g.err()
	}
}

type local struct {
	g     *Group
	rank  int
	stats *Stats
	sent  []int64 // per-call scratch
	recvd []int64
	guard offerGuard // of this rank's offers
}

func (c *local) Rank() int     { return c.rank }
func (c *local) Size() int     { return c.g.size }
func (c *local) Stats() *Stats { return c.stats }

func (c *local) scratch() ([]int64, []int64) {
	if c.sent == nil {
		c.sent, c.recvd = make([]int64, c.g.size), make([]int64, c.g.size)
	}
	clear(c.sent)
	clear(c.recvd)
	return c.sent, c.recvd
}

func (c *local) AllToAll(site string, send, recv [][]byte) error {
	if len(send) != c.g.size || len(recv) != c.g.size {
		return fmt.Errorf("comm: AllToAll(%s): %d send and %d receive buffers for %d ranks", site, len(send), len(recv), c.g.size)
	}
	recv[c.rank] = append(recv[c.rank][:0], send[c.rank]...)
	c.g.enter(c.rank, "AllToAll", site)
	defer c.g.leave(c.rank)
	return c.allToAll("AllToAll", site, func(p int) offer { return offer{buf: send[p]} }, intoBuffers(recv))
}

// AllToAllVisit makes the in-process group Direct: each receiver reads a
// peer's message in the peer's own buffer, which the peer keeps until
// every receiver has acknowledged it.
func (c *local) AllToAllVisit(site string, send [][]byte, visit func(p int, msg []byte)) error {
	if len(send) != c.g.size {
		return fmt.Errorf("comm: AllToAllVisit(%s): %d send buffers for %d ranks", site, len(send), c.g.size)
	}
	c.g.enter(c.rank, "AllToAll", site)
	defer c.g.leave(c.rank)
	return c.allToAll("AllToAll", site, func(p int) offer { return offer{buf: send[p]} }, func(p int, o offer) int {
		visit(p, o.buf)
		return len(o.buf)
	})
}

// AllToAllPull makes the in-process group Direct: each receiver calls the
// sender's write for the rows it reads, on the receiver's goroutine,
// while the sender waits for every receiver to acknowledge.
func (c *local) AllToAllPull(site string, rows []int, size int, write func(p, lo, hi int, dst []byte), visit func(p, n int, read func(lo, hi int, dst []byte))) error {
	if len(rows) != c.g.size || size < 0 {
		return fmt.Errorf("comm: AllToAllPull(%s): %d row counts of %d bytes for %d ranks", site, len(rows), size, c.g.size)
	}
	c.g.enter(c.rank, "AllToAllPull", site)
	defer c.g.leave(c.rank)
	// An abort ends the call before the receivers are done reading: from
	// then on, write must not run (the caller is free to reuse or drop what
	// it reads), so the call waits for the writes under way and turns the
	// later ones into zeros.
	gd := new(pullGuard)
	defer gd.close()
	return c.allToAll("AllToAllPull", site, func(p int) offer {
		return offer{pull: func(lo, hi int, dst []byte) { gd.write(write, p, lo, hi, dst) }, n: rows[p], size: size}
	}, func(p int, o offer) int {
		visit(p, o.n, o.pull)
		return o.len()
	})
}

// pullGuard keeps a sender's write from running once its AllToAllPull
// has returned.
type pullGuard struct {
	mu     sync.RWMutex
	closed bool
}

func (g *pullGuard) write(write func(p, lo, hi int, dst []byte), p, lo, hi int, dst []byte) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		clear(dst)
		return
	}
	write(p, lo, hi, dst)
}

// close waits for the writes under way and refuses the later ones.
func (g *pullGuard) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// intoBuffers delivers each peer p's message into recv[p], reusing its
// capacity.
func intoBuffers(recv [][]byte) func(p int, o offer) int {
	return func(p int, o offer) int {
		recv[p] = o.appendTo(recv[p][:0])
		return len(recv[p])
	}
}

// AllToAllRows makes the in-process group a rowSender: each receiver
// copies its rows from src itself, which costs what copying a message
// costs, so a message per peer is never built.
func (c *local) AllToAllRows(site string, src []byte, size int, at [][]int32, recv [][]byte) error {
	if len(recv) != c.g.size {
		return fmt.Errorf("comm: AllToAllRows(%s): %d receive buffers for %d ranks", site, len(recv), c.g.size)
	}
	if err := checkRows(site, src, size, at, c.g.size, c.rank); err != nil {
		return err
	}
	recv[c.rank] = recv[c.rank][:0]
	c.g.enter(c.rank, "AllToAllRows", site)
	defer c.g.leave(c.rank)
	return c.allToAll("AllToAllRows", site, func(p int) offer { return offer{buf: src, rows: true, size: size, at: at[p]} }, intoBuffers(recv))
}

// allToAll offers every peer p the message offerTo(p), hands every
// peer's to deliver, in rank order, which returns the bytes it took, and
// waits until the peers have taken its own. Once it returns, no peer reads
// its offers' buffers (offerGuard).
func (c *local) allToAll(kind, site string, offerTo func(p int) offer, deliver func(p int, o offer) int) error {
	g, r := c.g, c.rank
	start := time.Now()
	sent, recvd := c.scratch()
	defer c.guard.close()
	for p := range g.size {
		if p != r {
			o := offerTo(p)
			o.kind, o.site = kind, site
			if o.pull == nil {
				o.guard, o.gen = &c.guard, c.guard.gen
			}
			if err := g.post(r, p, o); err != nil {
				return err
			}
			sent[p] = int64(o.len())
		}
	}
	for p := range g.size {
		if p == r {
			continue
		}
		o, err := g.receive(p, r, kind, site)
		if err != nil {
			return err
		}
		n, ok := take(p, o, deliver)
		if !ok {
			return g.gone(p, r, kind, site)
		}
		recvd[p] = int64(n)
		g.ack(p, r)
	}
	// Our buffers may be reused only once every peer has copied them.
	for p := range g.size {
		if p == r {
			continue
		}
		select {
		case <-g.acks[r][p]:
		case <-g.aborted:
			return g.err()
		}
	}
	c.stats.record(site, r, sent, recvd, time.Since(start))
	return nil
}

func (c *local) AllReduce(site string, data []float32) error {
	g, r := c.g, c.rank
	start := time.Now()
	g.enter(r, "AllReduce", site)
	defer g.leave(r)
	g.reduceSlots[r] = data
	if r == 0 && cap(g.reduceSum) < len(data) {
		g.reduceSum = make([]float32, len(data))
	}
	if err := g.barrier(r, "AllReduce", site); err != nil {
		return err
	}
	for p, s := range g.reduceSlots {
		if len(s) != len(data) {
			return fmt.Errorf("comm: AllReduce(%s): rank %d has %d values, rank %d has %d", site, r, len(data), p, len(s))
		}
	}
	// Rank r sums chunk r of every ring round, in the canonical order
	// (ring.go), so the result equals a multi-process ring's bit for bit.
	n := len(data)
	sum := g.reduceSum[:n]
	for lo := 0; lo < n; {
		hi := ringRound(lo, n, g.size)
		clo, chi := ringChunk(lo, hi, r, g.size)
		canonicalSum(sum, g.reduceSlots, clo, chi, r)
		lo = hi
	}
	if err := g.barrier(r, "AllReduce", site); err != nil {
		return err
	}
	copy(data, sum)
	// Counted as the ring a network transport runs, chunk by chunk: about
	// 2(N−1)/N of the buffer to the next rank and from the previous one.
	sent, recvd := c.scratch()
	if g.size > 1 {
		sent[(r+1)%g.size] = ringBytesSent(n, g.size, r)
		recvd[(r+g.size-1)%g.size] = ringBytesSent(n, g.size, (r+g.size-1)%g.size)
	}
	c.stats.record(site, r, sent, recvd, time.Since(start))
	return nil
}

func (c *local) Broadcast(site string, root int, data []byte) error {
	g, r := c.g, c.rank
	if err := checkRoot(root, g.size); err != nil {
		return err
	}
	start := time.Now()
	g.enter(r, "Broadcast", site)
	defer g.leave(r)
	sent, recvd := c.scratch()
	if r == root {
		defer c.guard.close()
		for p := range g.size {
			if p != r {
				if err := g.post(r, p, offer{kind: "Broadcast", site: site, buf: data, guard: &c.guard, gen: c.guard.gen}); err != nil {
					return err
				}
				sent[p] = int64(len(data))
			}
		}
		for p := range g.size {
			if p == r {
				continue
			}
			select {
			case <-g.acks[r][p]:
			case <-g.aborted:
				return g.err()
			}
		}
	} else {
		o, err := g.receive(root, r, "Broadcast", site)
		if err != nil {
			return err
		}
		n, ok := take(root, o, func(_ int, o offer) int { return copy(data, o.buf) })
		if !ok {
			return g.gone(root, r, "Broadcast", site)
		}
		g.ack(root, r)
		if n != len(o.buf) || n != len(data) {
			return fmt.Errorf("comm: Broadcast(%s): root sent %d bytes, rank %d expects %d", site, len(o.buf), r, len(data))
		}
		recvd[root] = int64(n)
	}
	c.stats.record(site, r, sent, recvd, time.Since(start))
	return nil
}

func (c *local) Barrier(site string) error {
	start := time.Now()
	c.g.enter(c.rank, "Barrier", site)
	defer c.g.leave(c.rank)
	if err := c.g.barrier(c.rank, "Barrier", site); err != nil {
		return err
	}
	c.stats.record(site, c.rank, nil, nil, time.Since(start))
	return nil
}

// Run starts fn on every rank of a new group of size ranks, each in its own
// goroutine, and returns the first error. A rank that fails aborts the
// group, so the others return instead of waiting for it; a watchdog
// (Watch) aborts it when a rank waits in one collective for longer than
// DefaultDeadline. A rank whose fn has returned sends nothing more: a Recv
// that only it could satisfy fails naming it (a Group made by NewGroup
// alone does not know when a rank is done; such a Recv waits for its
// deadline).
func Run(size int, fn func(c Communicator) error) error {
	g := NewGroup(size)
	defer g.Watch(DefaultDeadline)()
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer g.finished(r)
			if err := fn(g.Comm(r)); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
				g.Abort(errs[r])
			}
		}()
	}
	wg.Wait()
	// Report the root cause, not the peers that were aborted because of it.
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrAborted) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Share makes the in-process group Direct: the first rank to call it for
// site (or to ask for more than the site's buffer holds) allocates the
// buffer, and the group keeps it for the site's next calls.
func (c *local) Share(site string, h Holder, size int) ([]byte, int, error) {
	if size < 0 {
		return nil, 0, fmt.Errorf("comm: Share(%s): %d bytes", site, size)
	}
	start := time.Now()
	g := c.g
	g.enter(c.rank, "Share", site)
	defer g.leave(c.rank)
	g.sharedMu.Lock()
	if g.shared == nil {
		g.shared = map[string]*sharedBuf{}
	}
	s := g.shared[site]
	if s == nil {
		s = &sharedBuf{holds: map[rankHolder]bool{}}
		g.shared[site] = s
	}
	s.holds[rankHolder{c.rank, h}] = true
	buf, grew := s.buf, 0
	if 4*len(buf) < size {
		grew = 4*((size+3)/4) - 4*len(buf)
		buf = hugepage.Float32s((size + 3) / 4)
		s.buf = buf
	}
	g.sharedMu.Unlock()
	if err := g.barrier(c.rank, "Share", site); err != nil {
		return nil, 0, err
	}
	c.stats.record(site, c.rank, nil, nil, time.Since(start))
	if size == 0 {
		return nil, grew, nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), size), grew, nil
}

// Unshare makes the in-process group Direct: the last holder of site's
// buffer to give it back drops it from the group.
func (c *local) Unshare(site string, h Holder) int {
	g := c.g
	g.sharedMu.Lock()
	defer g.sharedMu.Unlock()
	s := g.shared[site]
	if s == nil || !s.holds[rankHolder{c.rank, h}] {
		return 0
	}
	if delete(s.holds, rankHolder{c.rank, h}); len(s.holds) > 0 {
		return 0
	}
	delete(g.shared, site)
	return 4 * len(s.buf)
}

// AllToAllShared makes the in-process group Direct: a barrier, counted as
// an all-to-all of the sizes given.
func (c *local) AllToAllShared(site string, sent, recvd []int) error {
	if len(sent) != c.g.size || len(recvd) != c.g.size {
		return fmt.Errorf("comm: AllToAllShared(%s): %d sent and %d received sizes for %d ranks", site, len(sent), len(recvd), c.g.size)
	}
	start := time.Now()
	c.g.enter(c.rank, "AllToAllShared", site)
	defer c.g.leave(c.rank)
	if err := c.g.barrier(c.rank, "AllToAllShared", site); err != nil {
		return err
	}
	s, r := c.scratch()
	for p := range c.g.size {
		s[p], r[p] = int64(sent[p]), int64(recvd[p])
	}
	c.stats.record(site, c.rank, s, r, time.Since(start))
	return nil
}
