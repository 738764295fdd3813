package comm

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graft-gnn/graft/internal/hugepage"
)

// Communicator connects one worker to its group. Collective calls must be
// made by every rank in the same order with the same site names; a call
// returns an error (never hangs) once the group is aborted or a peer fails.
type Communicator interface {
	Rank() int
	Size() int
	// AllToAll sends send[p] to every peer p and stores what p sent into
	// recv[p], reusing its capacity. send[Rank()] is copied to recv[Rank()].
	AllToAll(site string, send, recv [][]byte) error
	// AllReduce replaces data with the element-wise sum over all ranks. The
	// summation order is fixed and the same for every implementation (see
	// ring.go), so results are reproducible and transport-independent.
	AllReduce(site string, data []float32) error
	// Broadcast copies root's data into every other rank's data (equal lengths).
	Broadcast(site string, root int, data []byte) error
	Barrier(site string) error
	// Send delivers msg to rank to, point to point: only the two ranks take
	// part, and msg may be reused once Send returns. Send does not wait for
	// the receiver to call Recv (the receiver stores what arrives), so it
	// returns promptly unless the transport itself is stuck, and then
	// within the transport's call timeout. Messages from one rank to
	// another arrive in the order sent.
	Send(site string, to int, msg []byte) error
	// Recv returns the first message sent to this rank for site by rank
	// from, or by any rank with from = AnyRank, and who sent it; messages
	// of other sites wait for their own Recv. It returns an error wrapping
	// ErrDeadline once deadline passes (the zero time: no deadline), and an
	// error naming the rank when that sender has failed or finished, or the
	// group is aborted. Send and Recv may be called concurrently with each
	// other and with collectives on other sites.
	Recv(site string, from int, deadline time.Time) (src int, msg []byte, err error)
	// Stats returns this rank's counters.
	Stats() *Stats
}

// RowsExchange is an all-to-all of rows picked from one buffer: peer p is
// sent the rows at[p] of src, in that order, each size bytes (row i is
// src[i·size:(i+1)·size]), and what p sent lands in recv[p], reusing its
// capacity. at[Rank()] is ignored and recv[Rank()] left empty. Bad
// arguments are an error on this rank alone, as with AllToAll: the caller
// aborts the group so that its peers stop waiting.
type RowsExchange func(site string, src []byte, size int, at [][]int32, recv [][]byte) error

// Direct is the all-to-alls of a Communicator whose ranks read each
// other's memory: the in-process group's. Its receivers take the peers'
// bytes where the peers hold them, so neither end needs a message buffer.
type Direct interface {
	// AllToAllRows is RowsExchange: each receiver copies its rows
	// straight from the sender's buffer, so a message per peer is never
	// built.
	AllToAllRows(site string, src []byte, size int, at [][]int32, recv [][]byte) error
	// AllToAllVisit sends send[p] to every peer p, as AllToAll does, and
	// hands what each peer sent to visit, in rank order (its own rank
	// skipped), where the peer holds it instead of copying it into a
	// buffer: msg is the peer's own send buffer, valid only during the
	// call. The traffic is counted as AllToAll's.
	AllToAllVisit(site string, send [][]byte, visit func(p int, msg []byte)) error
	// AllToAllPull is an all-to-all whose messages are made as they are
	// read, so that no rank holds them whole: the message to peer p is
	// rows[p] rows of size bytes, and write(p, lo, hi, dst) writes its rows
	// [lo, hi) into dst; visit(p, n, read) takes peer p's message of n
	// rows, in rank order (its own rank skipped), read(lo, hi, dst)
	// writing rows [lo, hi) of it into dst, each row once. write runs on
	// the receivers' goroutines, concurrently, while this rank waits in
	// the call until every receiver is done: it may read only what does
	// not change until the call returns. The traffic is counted as that of
	// AllToAll's messages.
	AllToAllPull(site string, rows []int, size int, write func(p, lo, hi int, dst []byte), visit func(p, n int, read func(lo, hi int, dst []byte))) error
	// Share returns the one buffer of size bytes, aligned for float32s,
	// that every rank gets for site, once every rank has called it: a
	// collective, which every rank calls with the same site and size in
	// the same order. The group keeps the buffer for the site's next
	// calls, which return it again (a new one, if it is too small), so
	// the ranks can take turns writing their parts of it and reading
	// the others': a call returns only once every rank is done with what
	// it did before its own call. grew is the bytes by which the call
	// grew the group's buffer, for the one rank whose call grew it (0 for
	// the others), so that the group's memory is counted once. The call
	// takes hold of the buffer for h, one of this rank's holders (one
	// hold however many times h calls Share), until h gives it back
	// (Unshare).
	Share(site string, h Holder, size int) (buf []byte, grew int, err error)
	// Unshare gives back h's hold of site's Share buffer, which h then no
	// longer reads or writes; the rank's other holders keep theirs. Once
	// every holder of every rank has given it back, the group drops the
	// buffer, and the call that gave it back last returns its size in
	// bytes, for the memory that grew counted to be taken back (0 from the
	// others' calls, and for a site h does not hold). Not a collective: a
	// next Share of the site takes hold again, of the group's buffer if a
	// holder still holds it, else of a new one.
	Unshare(site string, h Holder) (freed int)
	// AllToAllShared is a barrier after which every rank reads what its
	// peers wrote into a Share buffer, counted as AllToAll's messages
	// would be: sent[p] bytes to and recvd[p] bytes from each peer p.
	AllToAllShared(site string, sent, recvd []int) error
}

// A Holder is one user of a rank's Share buffers that gives back its hold
// on its own (Unshare): one of the rank's halo exchanges, say, so that an
// exchange that closes after a newer one took hold of the same buffer
// gives back its own hold only. NewHolder makes one.
type Holder uint64

var lastHolder atomic.Uint64

// NewHolder returns a Holder that no other call returned.
func NewHolder() Holder { return Holder(lastHolder.Add(1)) }

// rowSender is a Communicator with Direct's all-to-alls.
type rowSender interface {
	Communicator
	Direct
}

// DirectOf returns c's Direct all-to-alls, for the in-process group (also
// through WithLink), and false for every other transport, whose messages
// travel through buffers anyway.
func DirectOf(c Communicator) (Direct, bool) {
	d, ok := c.(rowSender)
	return d, ok
}

// Rows returns c's all-to-all of rows, chosen once for the caller to keep:
// the communicator's own where it has one (the in-process group, also
// through WithLink), and for every other transport one that copies each
// peer's rows into a message and calls AllToAll. Both move the same bytes.
func Rows(c Communicator) RowsExchange {
	if rs, ok := c.(rowSender); ok {
		return rs.AllToAllRows
	}
	send := make([][]byte, c.Size())
	return func(site string, src []byte, size int, at [][]int32, recv [][]byte) error {
		if err := checkRows(site, src, size, at, c.Size(), c.Rank()); err != nil {
			return err
		}
		for p := range send {
			send[p] = send[p][:0]
			if p == c.Rank() {
				continue
			}
			send[p] = hugepage.Grow(send[p], len(at[p])*size)
			for _, i := range at[p] {
				send[p] = append(send[p], src[int(i)*size:(int(i)+1)*size]...)
			}
		}
		if err := c.AllToAll(site, send, recv); err != nil {
			return err
		}
		recv[c.Rank()] = recv[c.Rank()][:0]
		return nil
	}
}

// checkRows checks AllToAllRows' arguments: a list per rank, and rows
// inside src.
func checkRows(site string, src []byte, size int, at [][]int32, ranks, self int) error {
	if len(at) != ranks || size < 0 {
		return fmt.Errorf("comm: AllToAllRows(%s): %d row lists of %d bytes for %d ranks", site, len(at), size, ranks)
	}
	rows := int32(0)
	if size > 0 {
		rows = int32(min(len(src)/size, 1<<31-1))
	}
	for p, list := range at {
		if p == self {
			continue
		}
		for _, i := range list {
			if i < 0 || (i >= rows && size > 0) {
				return fmt.Errorf("comm: AllToAllRows(%s): row %d of a %d-row buffer for rank %d", site, i, rows, p)
			}
		}
	}
	return nil
}

// ErrAborted is returned by collectives after the group has been aborted.
var ErrAborted = errors.New("comm: group aborted")

// SiteStats counts one call site on one rank.
type SiteStats struct {
	Calls           int64
	BytesSent       int64
	BytesReceived   int64
	Seconds         float64 // wall time spent inside the calls
	EmulatedSeconds float64 // time the emulated link would add (WithLink)
}

// Stats holds a rank's counters per call site and per peer. It is safe for
// concurrent use.
type Stats struct {
	mu        sync.Mutex
	sites     map[string]*SiteStats
	peerSent  []int64
	peerRecvd []int64
}

func newStats(size int) *Stats {
	return &Stats{sites: map[string]*SiteStats{}, peerSent: make([]int64, size), peerRecvd: make([]int64, size)}
}

// record adds one call's figures; sent and received are per peer (nil when
// not applicable) and may include the rank itself, which is not counted.
func (s *Stats) record(site string, self int, sent, recvd []int64, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sites[site]
	if st == nil {
		st = &SiteStats{}
		s.sites[site] = st
	}
	st.Calls++
	st.Seconds += d.Seconds()
	for p, n := range sent {
		if p != self {
			st.BytesSent += n
			s.peerSent[p] += n
		}
	}
	for p, n := range recvd {
		if p != self {
			st.BytesReceived += n
			s.peerRecvd[p] += n
		}
	}
}

func (s *Stats) addEmulated(site string, seconds float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sites[site]
	if st == nil {
		st = &SiteStats{}
		s.sites[site] = st
	}
	st.EmulatedSeconds += seconds
}

// Site returns a copy of one site's counters (zero if never called).
func (s *Stats) Site(site string) SiteStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.sites[site]; st != nil {
		return *st
	}
	return SiteStats{}
}

// Sites returns the names of every site called so far, sorted.
func (s *Stats) Sites() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.sites))
	for n := range s.sites {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Total sums the counters of every site whose name has the given prefix
// ("" for all).
func (s *Stats) Total(prefix string) SiteStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t SiteStats
	for n, st := range s.sites {
		if strings.HasPrefix(n, prefix) {
			t.Calls += st.Calls
			t.BytesSent += st.BytesSent
			t.BytesReceived += st.BytesReceived
			t.Seconds += st.Seconds
			t.EmulatedSeconds += st.EmulatedSeconds
		}
	}
	return t
}

// PeerBytes returns the bytes sent to and received from each peer.
func (s *Stats) PeerBytes() (sent, received []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.peerSent...), append([]int64(nil), s.peerRecvd...)
}

func checkRoot(root, size int) error {
	if root < 0 || root >= size {
		return fmt.Errorf("comm: broadcast root %d outside [0,%d)", root, size)
	}
	return nil
}
