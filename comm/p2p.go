package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// AnyRank as Recv's from takes the first message of the site from any rank.
const AnyRank = -1

// ErrDeadline is wrapped by the error of a Recv whose deadline passed
// before a message came.
var ErrDeadline = errors.New("deadline passed")

// message is one point-to-point message waiting to be received.
type message struct {
	from int
	site string
	data []byte
}

// inbox holds a rank's point-to-point messages that have arrived and not
// been received yet, in arrival order. Senders never wait for receivers:
// a message is stored as soon as it arrives, so a rank that sends before
// it receives cannot deadlock with one that does the same.
type inbox struct {
	mu   sync.Mutex
	msgs []message
	gone []bool        // gone[r]: rank r sends nothing more
	wake chan struct{} // closed and replaced on every change
	self int
}

func newInbox(self, size int) *inbox {
	return &inbox{gone: make([]bool, size), wake: make(chan struct{}), self: self}
}

func (b *inbox) changed() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// put stores a message (data is kept, not copied).
func (b *inbox) put(from int, site string, data []byte) {
	b.mu.Lock()
	b.msgs = append(b.msgs, message{from: from, site: site, data: data})
	b.changed()
	b.mu.Unlock()
}

// leave records that rank r sends nothing more; receives that can only be
// satisfied by r fail once its messages are taken.
func (b *inbox) leave(r int) {
	b.mu.Lock()
	if !b.gone[r] {
		b.gone[r] = true
		b.changed()
	}
	b.mu.Unlock()
}

// take removes the first message of site from rank from (AnyRank for any).
// Otherwise it returns an error if no such message can come any more, or
// the channel that is closed at the next change.
func (b *inbox) take(site string, from int) (message, <-chan struct{}, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, m := range b.msgs {
		if m.site == site && (from == AnyRank || m.from == from) {
			b.msgs = slices.Delete(b.msgs, i, i+1)
			return m, nil, nil
		}
	}
	if from != AnyRank {
		if b.gone[from] {
			return message{}, nil, &PeerError{Rank: from, Err: fmt.Errorf("%w before sending a message for %s", errPeerClosed, site)}
		}
		return message{}, b.wake, nil
	}
	for r, g := range b.gone {
		if !g && r != b.self {
			return message{}, b.wake, nil
		}
	}
	if len(b.gone) == 1 { // alone: only this rank's own messages can come
		return message{}, b.wake, nil
	}
	return message{}, nil, fmt.Errorf("comm: Recv(%s): every other rank %s", site, errPeerClosed)
}

// recv waits for take to succeed, until stop is closed (then it returns
// stopErr()) or the deadline passes (zero: no deadline).
func (b *inbox) recv(site string, from int, deadline time.Time, stop <-chan struct{}, stopErr func() error) (message, error) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for {
		m, wake, err := b.take(site, from)
		if err != nil || wake == nil {
			return m, err
		}
		select {
		case <-wake:
		case <-stop:
			// Deliver what arrived before the failure first.
			if m, wake, err := b.take(site, from); err == nil && wake == nil {
				return m, nil
			}
			return message{}, stopErr()
		case <-timeout:
			return message{}, deadlineError(site, from, deadline)
		}
	}
}

func deadlineError(site string, from int, deadline time.Time) error {
	who := fmt.Sprintf("rank %d", from)
	if from == AnyRank {
		who = "any rank"
	}
	return fmt.Errorf("comm: Recv(%s) from %s: %w (%s)", site, who, ErrDeadline, deadline.Format(time.RFC3339Nano))
}

// checkPeer checks a Send's or Recv's rank argument.
func checkPeer(call, site string, r, size int, any bool) error {
	if (r < 0 || r >= size) && !(any && r == AnyRank) {
		return fmt.Errorf("comm: %s(%s): rank %d outside [0,%d)", call, site, r, size)
	}
	return nil
}

// recordPeer adds one point-to-point call's figures to the site's counters.
func (s *Stats) recordPeer(site string, self, peer int, sent, recvd int64, d time.Duration) {
	var sv, rv []int64
	if sent > 0 || recvd > 0 {
		sv, rv = make([]int64, len(s.peerSent)), make([]int64, len(s.peerSent))
		sv[peer], rv[peer] = sent, recvd
	}
	s.record(site, self, sv, rv, d)
}

// encodeMessage prefixes msg with its site, for transports whose frames
// carry only a tag of it: a message must never be taken for another
// site's because their tags collide.
func encodeMessage(site string, msg []byte) []byte {
	b := make([]byte, 0, 2+len(site)+len(msg))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(site)))
	return append(append(b, site...), msg...)
}

func decodeMessage(b []byte) (site string, msg []byte, err error) {
	if len(b) < 2 {
		return "", nil, fmt.Errorf("%w: %d-byte message", ErrCorruptFrame, len(b))
	}
	n := int(binary.LittleEndian.Uint16(b))
	if len(b) < 2+n {
		return "", nil, fmt.Errorf("%w: message with a %d-byte site in %d bytes", ErrCorruptFrame, n, len(b))
	}
	return string(b[2 : 2+n]), b[2+n:], nil
}

// checkSite bounds a site name so that it fits a message's prefix.
func checkSite(site string) error {
	if len(site) > 1<<16-1 {
		return fmt.Errorf("comm: site name of %d bytes", len(site))
	}
	return nil
}

// Send and Recv of the in-process group: a message is copied into the
// receiver's inbox, so Send never waits for the receiver.
func (c *local) Send(site string, to int, msg []byte) error {
	if err := checkPeer("Send", site, to, c.g.size, false); err != nil {
		return err
	}
	start := time.Now()
	select {
	case <-c.g.aborted:
		return c.g.err()
	default:
	}
	c.g.inboxes[to].put(c.rank, site, append(make([]byte, 0, len(msg)), msg...))
	c.stats.recordPeer(site, c.rank, to, int64(len(msg)), 0, time.Since(start))
	return nil
}

func (c *local) Recv(site string, from int, deadline time.Time) (int, []byte, error) {
	if err := checkPeer("Recv", site, from, c.g.size, true); err != nil {
		return 0, nil, err
	}
	start := time.Now()
	m, err := c.g.inboxes[c.rank].recv(site, from, deadline, c.g.aborted, c.g.err)
	if err != nil {
		return 0, nil, err
	}
	c.stats.recordPeer(site, c.rank, m.from, 0, int64(len(m.data)), time.Since(start))
	return m.from, m.data, nil
}

// finished records that rank r's worker has returned: it sends nothing
// more, so a Recv waiting for it fails instead of waiting forever.
func (g *Group) finished(r int) {
	for _, b := range g.inboxes {
		b.leave(r)
	}
}
