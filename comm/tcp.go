package comm

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
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
	// Transport is TransportAuto ("" too: ranks on one host share memory)
	// or TransportTCP (every pair over TCP). A pair uses shared memory
	// only if neither of its ranks asks for TCP.
	Transport string

	shmRing  int  // each direction's shared-memory ring in bytes (tests; 0: shmRingFor)
	noRemote bool // shared-memory links copy every payload through the ring (tests)
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
// of ranks. Its collectives must be called from one goroutine at a time;
// Send and Recv from any goroutine.
type TCP struct {
	opt   Options
	rank  int
	size  int
	peers []*peer // nil at rank
	stats *Stats
	inbox *inbox // point-to-point messages (tcpp2p.go)

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
	t := &TCP{opt: opt, rank: opt.Rank, size: opt.Size, stats: newStats(opt.Size), inbox: newInbox(opt.Rank, opt.Size),
		failed: make(chan struct{}), sent: make([]int64, opt.Size), recvd: make([]int64, opt.Size)}
	t.peers = make([]*peer, opt.Size)
	for r, c := range conns {
		if c == nil {
			continue
		}
		c.SetDeadline(time.Time{})
		_, shm := c.(*shmConn)
		t.peers[r] = &peer{t: t, rank: r, conn: c, sums: !shm, sendq: make(chan *sendOp, 64), recvq: make(chan *recvOp, 2*ringChunkValues/ringSegmentValues+2),
			ctrl: make(chan []byte, 1), gone: make(chan struct{}), writerDone: make(chan struct{}), readerDone: make(chan struct{}),
			sock: newSockReader(c)}
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

// Abort fails the communicator with err and tells every peer why, so that
// their calls return an error naming this rank and err (wrapping
// ErrPeerAborted) instead of waiting for it or reporting it lost.
func (t *TCP) Abort(err error) {
	if err == nil {
		err = ErrAborted
	}
	t.fail(&PeerError{Rank: t.rank, Err: abortError{err.Error()}})
}

// ErrPeerAborted is wrapped by the error of a communicator whose peer
// stopped for a reason of its own and sent it before closing (Abort): the
// peer was not lost.
var ErrPeerAborted = errors.New("aborted")

// abortError is a rank's own reason for stopping.
type abortError struct{ reason string }

func (e abortError) Error() string        { return "aborted: " + e.reason }
func (e abortError) Is(target error) bool { return target == ErrPeerAborted }

// reportedError is a rank's failure as another rank reported it.
type reportedError struct {
	by      int
	reason  string
	aborted bool
}

func (e reportedError) Error() string {
	return fmt.Sprintf("reported by rank %d: %s", e.by, e.reason)
}
func (e reportedError) Is(target error) bool { return e.aborted && target == ErrPeerAborted }

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
// the connections. The rank it names is told too: one declared lost while
// alive (stalled past the peer timeout, or sending what this rank cannot
// take) then names itself, as the others do, instead of this rank, whose
// connection it would otherwise only see close. Writing to a rank that
// has died fails at once or within the shutdown's grace.
func (t *TCP) fail(err error) {
	t.failOnce.Do(func() {
		t.err = err
		// The abort names the rank lost; its reason is what befell that
		// rank, without the "comm: rank N: " of err, which the receiver
		// puts on its own error naming N.
		lost, reason := t.rank, err.Error()
		var pe *PeerError
		if errors.As(err, &pe) {
			lost, reason = pe.Rank, fmt.Sprint(pe.Err)
		}
		switch {
		case errors.Is(err, errPeerClosed):
		case pe == nil:
			t.opt.Logf("comm: rank %d: %v", t.rank, err)
		case lost == t.rank:
			t.opt.Logf("%v", err) // already "comm: rank <this rank>: ..."
		default:
			t.opt.Logf("comm: rank %d: rank %d: %v", t.rank, lost, pe.Err)
		}
		if ae := (abortError{}); errors.As(err, &ae) && lost == t.rank {
			reason = ae.reason
		}
		// A rank relaying its own loss, as another rank reported it, says
		// so: its peers then report it lost, as that rank does, not
		// stopped for a reason of its own.
		relayed := lost == t.rank && errors.As(err, new(reportedError))
		msg, _ := json.Marshal(control{Kind: "abort", Rank: t.rank, Lost: lost, Reason: reason, Aborted: errors.Is(err, ErrPeerAborted), Relayed: relayed})
		frame := appendFrame(nil, frameControl, 0, 0, 0, msg)
		for _, p := range t.peers {
			if p != nil {
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
	Kind  string   `json:"kind"` // join, mesh, table, ready, start, link, shm, shm-ok, shm-failed, remote, error, abort, bye
	Rank  int      `json:"rank"`
	Size  int      `json:"size,omitempty"`
	Addr  string   `json:"addr,omitempty"`
	Order string   `json:"order,omitempty"`
	Addrs []string `json:"addrs,omitempty"`
	Lost  int      `json:"lost,omitempty"`
	// Aborted: in an abort naming another rank, that rank aborted (rather
	// than being lost), so the error this rank reports wraps ErrPeerAborted
	// whether the news came from it or from a peer.
	Aborted bool `json:"aborted,omitempty"`
	// Relayed: in an abort naming its sender, the sender relays its loss
	// as another rank declared it, rather than stopping for a reason of
	// its own.
	Relayed bool   `json:"relayed,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Host    string `json:"host,omitempty"`  // link: where this rank's memory is (hostIdentity)
	Path    string `json:"path,omitempty"`  // shm: the segment to map
	Token   []byte `json:"token,omitempty"` // shm: what the segment must hold
	// shm, shm-ok: where the peer may read this rank's memory (shmremote.go)
	Probe *remoteProbe `json:"probe,omitempty"`
	Reads bool         `json:"reads,omitempty"` // shm-ok, remote: this rank can read the receiver's
}
