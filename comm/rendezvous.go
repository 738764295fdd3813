package comm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// byteOrder names this machine's byte order; float32 payloads travel in it,
// so every rank must share it.
const byteOrder = "little-endian"

// handshakeTimeout bounds one incoming connection's authentication, so a
// silent client cannot hold a slot for long.
const handshakeTimeout = 5 * time.Second

// maxPendingHandshakes bounds the connections being authenticated at once.
const maxPendingHandshakes = 32

// verdictGrace is how much longer than StartTimeout ranks other than 0 wait.
const verdictGrace = 2 * time.Second

// Connect forms the mesh and returns rank opt.Rank's communicator.
//
// Rank 0 listens on opt.Rendezvous; every other rank connects to it, says
// where it listens, and receives the table of every rank's address. Then
// rank i connects to each rank 0 < j < i, every connection authenticated
// with the job secret; when all are up, rank 0 releases everyone. A rank
// that has not arrived by opt.StartTimeout makes every rank fail with an
// error naming it. Listeners are closed once the mesh has formed.
func Connect(ctx context.Context, opt Options) (*TCP, error) {
	opt.setDefaults()
	if opt.Size < 1 || opt.Rank < 0 || opt.Rank >= opt.Size {
		return nil, fmt.Errorf("comm: rank %d outside a world of size %d", opt.Rank, opt.Size)
	}
	if err := CheckTransport(opt.Transport); err != nil {
		return nil, fmt.Errorf("comm: %w", err)
	}
	if opt.Size == 1 {
		return newTCP(opt, nil), nil
	}
	if len(opt.Secret) == 0 {
		return nil, errors.New("comm: no job secret (set GRAFT_TOKEN or a secret file)")
	}
	if opt.Rendezvous == "" && (opt.Rank != 0 || opt.Listener == nil) {
		return nil, errors.New("comm: no rendezvous address")
	}
	// Rank 0 judges who is missing; the others wait a little longer so that
	// they hear its verdict instead of timing out on their own.
	timeout := opt.StartTimeout
	if opt.Rank > 0 {
		timeout += verdictGrace
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var conns []net.Conn
	var err error
	if opt.Rank == 0 {
		conns, err = rendezvousRoot(ctx, &opt)
	} else {
		conns, err = rendezvousJoin(ctx, &opt)
	}
	if err == nil {
		conns, err = setUpLinks(ctx, &opt, conns)
	}
	if err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		// The package's prefix goes on here, once: the rendezvous's errors
		// also travel to other ranks as reasons, which they wrap in errors
		// of their own.
		return nil, fmt.Errorf("comm: %w", err)
	}
	return newTCP(opt, conns), nil
}

// arrival is an authenticated incoming connection and its first message.
type arrival struct {
	conn net.Conn
	msg  control
}

// acceptAll authenticates incoming connections on ln and delivers them to
// out until ctx ends. At most maxPendingHandshakes are authenticated at
// once; when another arrives, the oldest pending one is dropped, so that
// connections that never complete a handshake cannot keep a rank out (a
// rank's own handshake takes a few round trips, and it retries). Refusals
// are logged, never fatal, and rate-limited.
func acceptAll(ctx context.Context, ln net.Listener, opt *Options, out chan<- arrival) {
	refused := &refusals{logf: opt.Logf}
	var mu sync.Mutex
	var pending []net.Conn // oldest first
	var wg sync.WaitGroup
	defer func() {
		mu.Lock()
		for _, c := range pending {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		refused.flush()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		mu.Lock()
		if len(pending) == maxPendingHandshakes {
			pending[0].Close() // its handshake fails and is logged
			pending = pending[1:]
		}
		pending = append(pending, conn)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(handshakeTimeout)
			if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
				deadline = d
			}
			c, msg, err := acceptConn(ctx, conn, opt, deadline)
			mu.Lock()
			if i := slices.Index(pending, conn); i >= 0 {
				pending = slices.Delete(pending, i, i+1)
			} else if err != nil {
				err = fmt.Errorf("the oldest of %d pending handshakes, dropped for a newer connection", maxPendingHandshakes)
			}
			mu.Unlock()
			if err != nil {
				refused.add(conn.RemoteAddr(), err)
				conn.Close()
				return
			}
			select {
			case out <- arrival{c, msg}:
			case <-ctx.Done():
				c.Close()
			}
		}()
	}
}

// startAccepting runs acceptAll in the background; the channel it returns
// is closed once acceptAll has returned (after ctx ends and ln is closed),
// its last refusals logged.
func startAccepting(ctx context.Context, ln net.Listener, opt *Options, out chan<- arrival) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		acceptAll(ctx, ln, opt, out)
	}()
	return done
}

// refusalLogInterval is the least time between two lines about refused
// connections: anyone who can reach a rank's port can make it refuse
// connections as fast as they can open them.
const refusalLogInterval = 5 * time.Second

// refusals logs refused connections: the first at once, then at most one
// line per refusalLogInterval, each counting the refusals held back.
type refusals struct {
	logf func(format string, args ...any)

	mu    sync.Mutex
	last  time.Time
	held  int // refusals since the last line
	total int
}

func (r *refusals) add(from net.Addr, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if now := time.Now(); r.last.IsZero() || now.Sub(r.last) >= refusalLogInterval {
		more := ""
		if r.held > 0 {
			more = fmt.Sprintf(" (and %d more connections refused since the last such line)", r.held)
		}
		r.logf("comm: refused connection from %s: %v%s", from, err, more)
		r.last, r.held = now, 0
		return
	}
	r.held++
}

// flush logs the refusals held back, if any.
func (r *refusals) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held > 0 {
		r.logf("comm: refused %d more connections (%d in all) that did not complete the handshake", r.held, r.total)
		r.held = 0
	}
}

func acceptConn(ctx context.Context, conn net.Conn, opt *Options, deadline time.Time) (net.Conn, control, error) {
	conn.SetDeadline(deadline)
	if opt.TLS != nil {
		tc := tls.Server(conn, opt.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, control{}, fmt.Errorf("TLS: %w", err)
		}
		conn = tc
	}
	if err := handshakeAccept(conn, opt.Secret); err != nil {
		return nil, control{}, err
	}
	msg, err := readControl(conn)
	if err != nil {
		return nil, control{}, err
	}
	if msg.Size != opt.Size {
		writeControl(conn, control{Kind: "error", Reason: fmt.Sprintf("world size %d, but rank %d has %d", msg.Size, opt.Rank, opt.Size)})
		return nil, control{}, fmt.Errorf("rank %d claims world size %d, want %d", msg.Rank, msg.Size, opt.Size)
	}
	// From now on only the start-up deadline applies.
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	return conn, msg, nil
}

// dial connects and authenticates to addr, retrying with backoff (the peer
// may not be listening yet, or may have dropped the connection among many
// pending ones) until ctx ends. A handshake that fails on the proofs, or a
// TLS failure that is not a dropped connection, is not retried.
func dial(ctx context.Context, addr string, opt *Options) (net.Conn, error) {
	var last error
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if conn, err = handshakeWith(ctx, conn, addr, opt); err == nil {
				return conn, nil
			}
			if !dropped(err) {
				return nil, err
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s not reachable within the start-up timeout: %v", addr, last)
		case <-time.After(wait/2 + rand.N(wait/2)):
		}
	}
}

// handshakeWith authenticates the dialled conn (inside TLS if configured),
// closing it on failure. The handshake has handshakeTimeout; the
// connection then keeps the start-up deadline.
func handshakeWith(ctx context.Context, conn net.Conn, addr string, opt *Options) (net.Conn, error) {
	end, _ := ctx.Deadline()
	hs := time.Now().Add(handshakeTimeout)
	if !end.IsZero() && end.Before(hs) {
		hs = end
	}
	conn.SetDeadline(hs)
	if opt.TLS != nil {
		tc := tls.Client(conn, opt.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS with %s: %w", addr, err)
		}
		conn = tc
	}
	if err := handshakeDial(conn, opt.Secret); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	conn.SetDeadline(end)
	return conn, nil
}

// dropped reports whether a handshake failed because the connection was
// closed or timed out, rather than on a proof or a certificate.
func dropped(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout())
}

func writeControl(conn net.Conn, m control) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = conn.Write(appendFrame(nil, frameControl, 0, 0, 0, b))
	return err
}

func readControl(conn net.Conn) (control, error) {
	h, b, err := readFrame(conn, maxControlPayload, nil)
	if err != nil {
		return control{}, err
	}
	var m control
	if h.typ != frameControl {
		return m, fmt.Errorf("%w: type %d during start-up", ErrCorruptFrame, h.typ)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrCorruptFrame, err)
	}
	if m.Kind == "error" {
		return m, errors.New(m.Reason)
	}
	return m, nil
}

func rankList(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = fmt.Sprint(r)
	}
	if len(s) == 1 {
		return "rank " + s[0]
	}
	return "ranks " + strings.Join(s, ", ")
}

func rendezvousRoot(ctx context.Context, opt *Options) ([]net.Conn, error) {
	ln := opt.Listener
	if ln == nil {
		var err error
		addr := opt.Rendezvous
		if opt.Listen != "" { // e.g. the pod's IP where Rendezvous is a DNS name
			addr = opt.Listen
		}
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("rendezvous: %w", err)
		}
	}
	where := ln.Addr().String()
	conns := make([]net.Conn, opt.Size)
	addrs := make([]string, opt.Size)
	broadcastError := func(reason string) {
		for _, c := range conns {
			if c != nil {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				writeControl(c, control{Kind: "error", Reason: reason})
			}
		}
	}
	actx, stop := context.WithCancel(ctx)
	arrivals := make(chan arrival)
	accepting := startAccepting(actx, ln, opt, arrivals)
	defer func() { stop(); ln.Close(); <-accepting }()
	for missing := opt.Size - 1; missing > 0; {
		select {
		case a := <-arrivals:
			r := a.msg.Rank
			switch {
			case a.msg.Kind != "join" || r <= 0 || r >= opt.Size:
				writeControl(a.conn, control{Kind: "error", Reason: fmt.Sprintf("rank %d cannot join a world of size %d", r, opt.Size)})
				opt.Logf("comm: refused %s: %q as rank %d", a.conn.RemoteAddr(), a.msg.Kind, r)
				a.conn.Close()
			case conns[r] != nil:
				writeControl(a.conn, control{Kind: "error", Reason: fmt.Sprintf("rank %d has already joined from %s", r, conns[r].RemoteAddr())})
				opt.Logf("comm: refused %s: rank %d has already joined from %s", a.conn.RemoteAddr(), r, conns[r].RemoteAddr())
				a.conn.Close()
			case a.msg.Order != byteOrder:
				writeControl(a.conn, control{Kind: "error", Reason: fmt.Sprintf("byte order %q, but rank 0 is %s", a.msg.Order, byteOrder)})
				a.conn.Close()
			default:
				conns[r], addrs[r] = a.conn, a.msg.Addr
				missing--
			}
		case <-ctx.Done():
			var absent []int
			for r := 1; r < opt.Size; r++ {
				if conns[r] == nil {
					absent = append(absent, r)
				}
			}
			err := fmt.Errorf("%s never arrived at the rendezvous on %s within %v", rankList(absent), where, opt.StartTimeout)
			broadcastError(err.Error())
			return conns, err
		}
	}
	stop()
	ln.Close()
	<-accepting
	for r := 1; r < opt.Size; r++ {
		if err := writeControl(conns[r], control{Kind: "table", Addrs: addrs}); err != nil {
			err = fmt.Errorf("rendezvous: rank %d: %w", r, err)
			broadcastError(err.Error())
			return conns, err
		}
	}
	for r := 1; r < opt.Size; r++ {
		m, err := readControl(conns[r])
		if err == nil && m.Kind != "ready" {
			err = fmt.Errorf("unexpected %q", m.Kind)
		}
		if err != nil {
			err = fmt.Errorf("rank %d: could not join the mesh: %w", r, err)
			broadcastError(err.Error())
			return conns, err
		}
	}
	for r := 1; r < opt.Size; r++ {
		if err := writeControl(conns[r], control{Kind: "start"}); err != nil {
			return conns, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return conns, nil
}

func rendezvousJoin(ctx context.Context, opt *Options) (conns []net.Conn, err error) {
	conns = make([]net.Conn, opt.Size)
	root, err := dial(ctx, opt.Rendezvous, opt)
	if err != nil {
		return conns, fmt.Errorf("rank %d: rendezvous with rank 0: %w", opt.Rank, err)
	}
	conns[0] = root
	// Whatever goes wrong from here, rank 0 tells everyone.
	defer func() {
		if err != nil {
			root.SetWriteDeadline(time.Now().Add(time.Second))
			writeControl(root, control{Kind: "error", Reason: err.Error()})
		}
	}()
	listen := opt.Listen
	if listen == "" {
		host, _, _ := net.SplitHostPort(root.LocalAddr().String())
		listen = net.JoinHostPort(host, "0")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return conns, fmt.Errorf("rank %d: %w", opt.Rank, err)
	}
	defer ln.Close()
	if err := writeControl(root, control{Kind: "join", Rank: opt.Rank, Size: opt.Size, Addr: ln.Addr().String(), Order: byteOrder}); err != nil {
		return conns, fmt.Errorf("rank %d: rendezvous: %w", opt.Rank, err)
	}
	table, err := readControl(root)
	if err == nil && (table.Kind != "table" || len(table.Addrs) != opt.Size) {
		err = fmt.Errorf("%w: bad table", ErrCorruptFrame)
	}
	if err != nil {
		return conns, fmt.Errorf("rank %d: rendezvous: %w", opt.Rank, err)
	}
	// Accept the ranks above us while dialling the ones below.
	actx, stop := context.WithCancel(ctx)
	arrivals := make(chan arrival)
	accepting := startAccepting(actx, ln, opt, arrivals)
	defer func() { stop(); ln.Close(); <-accepting }()
	for r := 1; r < opt.Rank; r++ {
		c, err := dial(ctx, table.Addrs[r], opt)
		if err == nil {
			err = writeControl(c, control{Kind: "mesh", Rank: opt.Rank, Size: opt.Size})
			conns[r] = c
		}
		if err != nil {
			return conns, fmt.Errorf("rank %d: connecting to rank %d: %w", opt.Rank, r, err)
		}
	}
	for missing := opt.Size - 1 - opt.Rank; missing > 0; {
		select {
		case a := <-arrivals:
			r := a.msg.Rank
			if a.msg.Kind != "mesh" || r <= opt.Rank || r >= opt.Size || conns[r] != nil {
				opt.Logf("comm: refused %s: %q as rank %d", a.conn.RemoteAddr(), a.msg.Kind, r)
				a.conn.Close()
				continue
			}
			conns[r] = a.conn
			missing--
		case <-ctx.Done():
			var absent []int
			for r := opt.Rank + 1; r < opt.Size; r++ {
				if conns[r] == nil {
					absent = append(absent, r)
				}
			}
			return conns, fmt.Errorf("%s never connected to rank %d within %v", rankList(absent), opt.Rank, opt.StartTimeout)
		}
	}
	stop()
	ln.Close()
	<-accepting
	if err := writeControl(root, control{Kind: "ready", Rank: opt.Rank}); err != nil {
		return conns, fmt.Errorf("rank %d: %w", opt.Rank, err)
	}
	m, err := readControl(root)
	if err == nil && m.Kind != "start" {
		err = fmt.Errorf("%w: unexpected %q", ErrCorruptFrame, m.Kind)
	}
	if err != nil {
		return conns, fmt.Errorf("rank %d: waiting for the start: %w", opt.Rank, err)
	}
	return conns, nil
}

// TLSConfig builds the TLS configuration for Options.TLS from PEM files:
// this rank's certificate and key, and the CA that signed every rank's
// certificate. Both sides present and verify certificates against the CA;
// host names are not checked (ranks are addressed by IP and the job secret
// is checked inside the tunnel).
func TLSConfig(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("comm: TLS: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("comm: TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("comm: TLS: no certificate in %s", caFile)
	}
	return TLSConfigFrom(cert, pool), nil
}

// TLSConfigFrom is TLSConfig for a certificate and CA pool already loaded.
func TLSConfigFrom(cert tls.Certificate, ca *x509.CertPool) *tls.Config {
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, b := range raw {
			c, err := x509.ParseCertificate(b)
			if err != nil {
				return err
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: ca, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		return err
	}
	return &tls.Config{
		Certificates:          []tls.Certificate{cert},
		MinVersion:            tls.VersionTLS13,
		ClientAuth:            tls.RequireAnyClientCert,
		InsecureSkipVerify:    true, // replaced by verify, which checks the chain but not host names
		VerifyPeerCertificate: verify,
	}
}
