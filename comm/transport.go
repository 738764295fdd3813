package comm

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
)

// Transports: how a pair of ranks moves its frames (Options.Transport).
const (
	// TransportAuto moves the frames of ranks on one host through shared
	// memory (shmconn.go), and of the others over their TCP connection.
	TransportAuto = "auto"
	// TransportTCP moves every pair's frames over TCP.
	TransportTCP = "tcp"
)

// TransportEnv is the environment variable launchers read Options.Transport
// from.
const TransportEnv = "GRAFT_TRANSPORT"

// CheckTransport checks a transport name; "" means TransportAuto.
func CheckTransport(s string) error {
	switch s {
	case "", TransportAuto, TransportTCP:
		return nil
	}
	return fmt.Errorf("transport %q: want %s or %s", s, TransportAuto, TransportTCP)
}

// Link kinds a pair ends up with (TCP.Transport).
const (
	linkTCP = "tcp"
	linkShm = "shm"
)

// shmRingFor is the ring size of a world's pairs: 4 MiB each way, less in
// large worlds so that one rank's rings stay within 64 MiB.
func shmRingFor(size int) int {
	ring := defaultShmRing
	for ring > 256<<10 && (size-1)*2*ring > 64<<20 {
		ring /= 2
	}
	return ring
}

// setUpLinks turns each authenticated connection of the mesh into the link
// its pair will use: the connection itself, or a shared-memory link beside
// it when both ranks can map the same memory (the same host identity) and
// neither asked for TCP. Pairs agree over their own connection, all at once.
func setUpLinks(ctx context.Context, opt *Options, conns []net.Conn) ([]net.Conn, error) {
	links := make([]net.Conn, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for r, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			links[r], errs[r] = setUpLink(ctx, opt, c, r)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			for i, l := range links {
				if l != nil {
					l.Close()
				}
				if conns[i] != nil {
					conns[i].Close()
				}
			}
			return nil, fmt.Errorf("rank %d: choosing the link to rank %d: %w", opt.Rank, r, err)
		}
	}
	return links, nil
}

// setUpLink agrees on the link to rank peer over conn. Both sides say
// where they are; if it is the same place, the lower rank creates a
// segment and sends its name and token (over this authenticated
// connection only), the higher rank maps it and says so, and the file is
// removed. A segment that cannot be created or mapped leaves the pair on
// TCP, logged.
func setUpLink(ctx context.Context, opt *Options, conn net.Conn, peer int) (net.Conn, error) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	me := control{Kind: "link", Rank: opt.Rank}
	if opt.Transport != TransportTCP {
		me.Host = hostIdentity()
	}
	if err := writeControl(conn, me); err != nil {
		return nil, err
	}
	them, err := readControl(conn)
	if err == nil && them.Kind != "link" {
		err = fmt.Errorf("%w: %q instead of the link", ErrCorruptFrame, them.Kind)
	}
	if err != nil {
		return nil, err
	}
	if me.Host == "" || them.Host != me.Host {
		return conn, nil
	}
	if opt.Rank < peer {
		return createLink(opt, conn, peer)
	}
	return openLink(opt, conn, peer)
}

// createLink is the lower rank's side of a shared-memory link.
func createLink(opt *Options, conn net.Conn, peer int) (net.Conn, error) {
	ring := opt.shmRing
	if ring == 0 {
		ring = shmRingFor(opt.Size)
	}
	mem, path, token, err := createSegment(ring)
	if err != nil {
		opt.Logf("comm: rank %d: TCP to rank %d on this host: no shared memory: %v", opt.Rank, peer, err)
		return conn, writeControl(conn, control{Kind: "shm"})
	}
	unmap := unmapSegment(mem)
	defer removeSegment(path)
	probe, cookie := offerRemote(opt)
	defer runtime.KeepAlive(cookie) // until the peer has read it
	err = writeControl(conn, control{Kind: "shm", Path: path, Token: token, Probe: probe})
	var reply control
	if err == nil {
		reply, err = readControl(conn)
	}
	if err != nil {
		unmap()
		return nil, err
	}
	if reply.Kind != "shm-ok" {
		unmap()
		opt.Logf("comm: rank %d: TCP to rank %d on this host: it could not map shared memory: %s", opt.Rank, peer, reply.Reason)
		return conn, nil
	}
	remote := acceptRemote(opt, peer, reply.Probe)
	if err := writeControl(conn, control{Kind: "remote", Reads: remote != nil}); err != nil {
		unmap()
		if remote != nil {
			remote.proc.Release()
		}
		return nil, err
	}
	return newShmConn(conn, mem, ring, true, unmap, remote, reply.Reads), nil
}

// offerRemote is this rank's offer to let the peer read its memory (nil
// when the options keep every payload in the ring), and the cookie to
// keep reachable until the peer has answered.
func offerRemote(opt *Options) (*remoteProbe, []byte) {
	if opt.noRemote {
		return nil, nil
	}
	return newRemoteProbe()
}

// acceptRemote opens the peer's memory for remote reads, if it offered
// and the system allows; nil (logged when it offered) otherwise.
func acceptRemote(opt *Options, peer int, pr *remoteProbe) *remotePeer {
	if pr == nil || opt.noRemote {
		return nil
	}
	rp, err := openRemotePeer(pr)
	if err != nil {
		opt.Logf("comm: rank %d: data from rank %d passes through the shared ring: %v", opt.Rank, peer, err)
	}
	return rp
}

// openLink is the higher rank's side of a shared-memory link.
func openLink(opt *Options, conn net.Conn, peer int) (net.Conn, error) {
	m, err := readControl(conn)
	if err == nil && m.Kind != "shm" {
		err = fmt.Errorf("%w: %q instead of the shared memory", ErrCorruptFrame, m.Kind)
	}
	if err != nil || m.Path == "" {
		return conn, err
	}
	mem, ring, err := openSegment(m.Path, m.Token)
	if err != nil {
		opt.Logf("comm: rank %d: TCP to rank %d on this host: %v", opt.Rank, peer, err)
		return conn, writeControl(conn, control{Kind: "shm-failed", Reason: err.Error()})
	}
	unmap := unmapSegment(mem)
	remote := acceptRemote(opt, peer, m.Probe)
	probe, cookie := offerRemote(opt)
	defer runtime.KeepAlive(cookie) // until the peer has read it
	err = writeControl(conn, control{Kind: "shm-ok", Probe: probe, Reads: remote != nil})
	var them control
	if err == nil {
		them, err = readControl(conn)
	}
	if err == nil && them.Kind != "remote" {
		err = fmt.Errorf("%w: %q instead of the remote reads", ErrCorruptFrame, them.Kind)
	}
	if err != nil {
		unmap()
		if remote != nil {
			remote.proc.Release()
		}
		return nil, err
	}
	return newShmConn(conn, mem, ring, false, unmap, remote, them.Reads), nil
}

// Transport returns how this rank reaches rank r: "shm" (shared memory) or
// "tcp"; "" for itself or a rank outside the world.
func (t *TCP) Transport(r int) string {
	if r < 0 || r >= t.size || t.peers[r] == nil {
		return ""
	}
	if _, ok := t.peers[r].conn.(*shmConn); ok {
		return linkShm
	}
	return linkTCP
}
