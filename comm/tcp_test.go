package comm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("b7e2094c1fd35a68e0c4192f") // random, as a job secret should be

// quick returns options with short timeouts for tests.
func quick(t testing.TB) Options {
	return Options{Secret: testSecret, StartTimeout: 5 * time.Second, PeerTimeout: 2 * time.Second,
		HeartbeatInterval: 200 * time.Millisecond, CallTimeout: 10 * time.Second, Logf: t.Logf}
}

// connectAll forms a loopback mesh of size ranks; edit may change each
// rank's options. It returns each rank's communicator or error.
func connectAll(t testing.TB, size int, edit func(rank int, o *Options)) ([]*TCP, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return connectOn(t, ln, size, edit)
}

// connectOn is connectAll with rank 0's listener ln (its rendezvous).
func connectOn(t testing.TB, ln net.Listener, size int, edit func(rank int, o *Options)) ([]*TCP, []error) {
	t.Helper()
	comms := make([]*TCP, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		o := quick(t)
		o.Rank, o.Size, o.Rendezvous = r, size, ln.Addr().String()
		if r == 0 {
			o.Listener = ln
		}
		if edit != nil {
			edit(r, &o)
		}
		if o.Rank < 0 { // this rank does not start
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[r], errs[r] = Connect(context.Background(), o)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range comms {
			if c != nil {
				c.Close()
			}
		}
	})
	return comms, errs
}

func mesh(t testing.TB, size int) []*TCP {
	t.Helper()
	return meshOver(t, size, TransportAuto)
}

// testLinks are the links the communicator's tests run over: TCP, shared
// memory (large frames copied from the sender's memory: shmremote.go),
// shared memory that copies every byte through the ring, and shared memory
// through one-page rings, where writers wait for room within every frame
// and readers see frames wrap around.
var testLinks = []string{"tcp", "shm", "shm-copy", "shm-page"}

// forLinks runs fn as a subtest over each of testLinks.
func forLinks(t *testing.T, fn func(t *testing.T, link string)) {
	for _, link := range testLinks {
		t.Run(link, func(t *testing.T) { fn(t, link) })
	}
}

// linkOptions sets o for link, one of testLinks or "auto".
func linkOptions(link string, o *Options) {
	switch link {
	case TransportTCP:
		o.Transport = TransportTCP
	case "shm-copy":
		o.noRemote = true
	case "shm-page":
		o.shmRing = 4096
	}
}

// meshOver forms a mesh whose pairs all use one link: "tcp", or "shm" and
// "shm-page" (see testLinks; the test fails if a pair could not share
// memory), or whatever "auto" picks.
func meshOver(t testing.TB, size int, link string) []*TCP {
	t.Helper()
	return meshWith(t, size, link, nil)
}

// meshWith is meshOver with edit, if not nil, changing each rank's options
// after the link's.
func meshWith(t testing.TB, size int, link string, edit func(o *Options)) []*TCP {
	t.Helper()
	if strings.HasPrefix(link, linkShm) && hostIdentity() == "" {
		t.Skip("no shared memory on this system")
	}
	comms, errs := connectAll(t, size, func(_ int, o *Options) {
		linkOptions(link, o)
		if edit != nil {
			edit(o)
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if strings.HasPrefix(link, linkShm) {
		for _, c := range comms {
			for p := range size {
				if p != c.Rank() && c.Transport(p) != linkShm {
					t.Fatalf("rank %d reaches rank %d over %q, want shared memory", c.Rank(), p, c.Transport(p))
				}
				if p == c.Rank() {
					continue
				}
				// In one process, every rank may read every other's memory.
				if sc, ok := c.peers[p].conn.(*shmConn); ok && (sc.remote != nil) != (link != "shm-copy") {
					t.Fatalf("rank %d reads rank %d's memory: %v, on a %s link", c.Rank(), p, sc.remote != nil, link)
				}
			}
		}
	}
	return comms
}

// onEach runs fn on every rank concurrently and returns the errors.
func onEach(comms []*TCP, fn func(c *TCP) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = fn(c)
		}()
	}
	wg.Wait()
	return errs
}

func firstErr(errs []error) error {
	for r, err := range errs {
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

func TestTCPAllToAllDeliversEveryBuffer(t *testing.T) { forLinks(t, testAllToAll) }

func testAllToAll(t *testing.T, link string) {
	for _, size := range []int{1, 2, 3, 4} {
		comms := meshOver(t, size, link)
		// Lengths include empty messages and one spanning three frames.
		length := func(s, d, step int) int {
			if s == 0 && d == size-1 && step == 1 {
				return 2*maxDataPayload + 3
			}
			return (s*7 + d*3 + step) % 11
		}
		payload := func(s, d, step int) []byte {
			b := make([]byte, length(s, d, step))
			for i := range b {
				b[i] = byte(s*31 + d*17 + step + i)
			}
			return b
		}
		err := firstErr(onEach(comms, func(c *TCP) error {
			recv := make([][]byte, size)
			var wantSent, wantRecv int64
			for step := range 3 {
				send := make([][]byte, size)
				for d := range size {
					send[d] = payload(c.Rank(), d, step)
					if d != c.Rank() {
						wantSent += int64(len(send[d]))
						wantRecv += int64(length(d, c.Rank(), step))
					}
				}
				if err := c.AllToAll("x", send, recv); err != nil {
					return err
				}
				for s := range size {
					if want := payload(s, c.Rank(), step); !bytes.Equal(recv[s], want) {
						return fmt.Errorf("step %d: from %d got %d bytes, want %d", step, s, len(recv[s]), len(want))
					}
				}
			}
			st := c.Stats().Site("x")
			if st.Calls != 3 || st.BytesSent != wantSent || st.BytesReceived != wantRecv {
				return fmt.Errorf("stats %+v, want 3 calls, %d sent, %d received", st, wantSent, wantRecv)
			}
			return nil
		}))
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
	}
}

// The TCP ring and the in-process group sum in the same order, so a run
// gives the same bits on one process and on many, and they count the same
// bytes, rank by rank, whether or not the chunks are of equal length.
func TestTCPAllReduceIsBitIdenticalToGroup(t *testing.T) { forLinks(t, testAllReduce) }

func testAllReduce(t *testing.T, link string) {
	cases := []struct{ size, n int }{
		{2, 1}, {2, 5}, {3, 1000}, {4, 3}, {2, 2*ringChunkValues + 7}, {3, 3*ringChunkValues + 1},
		// Chunks on either side of a segment boundary (1 and 2 segments).
		{2, 2*ringSegmentValues + 1}, {3, 3*ringSegmentValues + 2}, {2, 2*ringSegmentValues - 1},
	}
	for _, tc := range cases {
		inputs := randomInputs(tc.size, tc.n, uint64(tc.n))
		want := referenceSum(inputs)
		group := make([][]float32, tc.size)
		groupStats := make([]SiteStats, tc.size)
		if err := Run(tc.size, func(c Communicator) error {
			group[c.Rank()] = append([]float32(nil), inputs[c.Rank()]...)
			err := c.AllReduce("g", group[c.Rank()])
			groupStats[c.Rank()] = c.Stats().Site("g")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		comms := meshOver(t, tc.size, link)
		err := firstErr(onEach(comms, func(c *TCP) error {
			data := append([]float32(nil), inputs[c.Rank()]...)
			if err := c.AllReduce("g", data); err != nil {
				return err
			}
			for i := range data {
				if data[i] != want[i] || data[i] != group[c.Rank()][i] {
					return fmt.Errorf("[%d] = %v, group %v, reference %v", i, data[i], group[c.Rank()][i], want[i])
				}
			}
			st := c.Stats().Site("g")
			if wantBytes := int64(2*(tc.size-1)) * int64(4*tc.n) / int64(tc.size); tc.n%tc.size == 0 && st.BytesSent != wantBytes {
				return fmt.Errorf("sent %d bytes, want %d", st.BytesSent, wantBytes)
			}
			if g := groupStats[c.Rank()]; st.BytesSent != g.BytesSent || st.BytesReceived != g.BytesReceived {
				return fmt.Errorf("rank %d sent %d and received %d bytes; in the group, %d and %d", c.Rank(), st.BytesSent, st.BytesReceived, g.BytesSent, g.BytesReceived)
			}
			return nil
		}))
		if err != nil {
			t.Fatalf("size %d, n %d: %v", tc.size, tc.n, err)
		}
	}
}

func TestTCPBroadcastAndBarrier(t *testing.T) { forLinks(t, testBroadcastAndBarrier) }

func testBroadcastAndBarrier(t *testing.T, link string) {
	comms := meshOver(t, 3, link)
	big := bytes.Repeat([]byte("graft"), maxDataPayload/4) // two frames
	err := firstErr(onEach(comms, func(c *TCP) error {
		data := make([]byte, len(big))
		if c.Rank() == 1 {
			copy(data, big)
		}
		if err := c.Broadcast("b", 1, data); err != nil {
			return err
		}
		if !bytes.Equal(data, big) {
			return errors.New("broadcast payload differs")
		}
		return c.Barrier("end")
	}))
	if err != nil {
		t.Fatal(err)
	}
}

// Misuse by the caller ends in a clear error on every rank, never a hang.
func TestTCPMismatchedCallsAreErrors(t *testing.T) {
	cases := []struct {
		name string
		call func(c *TCP) error
		want string
	}{
		{"lengths", func(c *TCP) error { return c.AllReduce("g", make([]float32, 10+c.Rank())) }, "different lengths"},
		{"one empty", func(c *TCP) error { return c.AllReduce("g", make([]float32, 10*c.Rank())) }, "different lengths"},
		{"sites", func(c *TCP) error { return c.AllReduce(fmt.Sprint("site", c.Rank()), make([]float32, 10)) }, "same order"},
		{"broadcast length", func(c *TCP) error { return c.Broadcast("b", 0, make([]byte, 5-c.Rank())) }, "expects"},
	}
	for _, tc := range cases {
		forLinks(t, func(t *testing.T, link string) {
			t.Run(tc.name, func(t *testing.T) { testMismatch(t, link, tc.call, tc.want) })
		})
	}
}

func testMismatch(t *testing.T, link string, call func(c *TCP) error, want string) {
	comms := meshOver(t, 2, link)
	errs := onEach(comms, call)
	if errs[0] == nil && errs[1] == nil {
		t.Fatal("no rank reported the mismatch")
	}
	found := false
	for _, err := range errs {
		found = found || (err != nil && strings.Contains(err.Error(), want))
	}
	if !found {
		t.Fatalf("errors %v; want one mentioning %q", errs, want)
	}
}

// loopUntilError runs all-reduces on c until one fails, and reports how
// long that took.
func loopUntilError(c *TCP) (error, time.Duration) {
	start := time.Now()
	data := make([]float32, 1000)
	for {
		if err := c.AllReduce("g", data); err != nil {
			return err, time.Since(start)
		}
	}
}

func TestTCPLostPeerIsNamedWithinTheDeadline(t *testing.T) {
	cases := []struct {
		name  string
		fail  func(c *TCP) // what rank 2 does
		limit time.Duration
		want  string
	}{
		{"crash", crash, time.Second, "rank 2"},
		{"abort", func(c *TCP) { c.Abort(errors.New("disk full")) }, time.Second, "disk full"},
		{"close", func(c *TCP) { c.Close() }, time.Second, "closed its communicator"},
	}
	for _, tc := range cases {
		forLinks(t, func(t *testing.T, link string) {
			t.Run(tc.name, func(t *testing.T) { testLostPeer(t, link, tc.fail, tc.limit, tc.want) })
		})
	}
}

// crash stops c as a killed process stops (TestKilledPeerIsNamed kills
// one): all at once, saying nothing more. It sends no goodbye and no
// abort, its writers stop, and what its readers then see of its
// connections closing is reported to nobody; the connections drop, as
// the kernel drops a dead process's. Close still releases what c holds.
func crash(c *TCP) {
	c.failOnce.Do(func() {
		c.err = errors.New("crashed (simulated)")
		close(c.failed) // stops the writers and the readers waiting for a receive
	})
	for _, p := range c.peers {
		if p != nil {
			p.conn.Close()
		}
	}
}

func testLostPeer(t *testing.T, link string, fail func(c *TCP), limit time.Duration, want string) {
	// Nothing here waits for a silent peer: rank 2's failure shows on its
	// connections (closed, or carrying its last frame). So the peer and
	// start-up timeouts, far above the deadline asserted below, cannot
	// help meet it; they only keep a loaded machine, where a rank's
	// goroutines may not run for seconds, from failing the mesh or its
	// warm-up on them.
	comms := meshWith(t, 3, link, func(o *Options) { o.PeerTimeout, o.StartTimeout = time.Minute, time.Minute })
	errs := make([]error, 2)
	took := make([]time.Duration, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r], took[r] = loopUntilError(comms[r]) }()
	}
	// Rank 2 takes part for a while, then fails outside a call.
	data := make([]float32, 1000)
	for range 5 {
		if err := comms[2].AllReduce("g", data); err != nil {
			t.Fatal(err)
		}
	}
	fail(comms[2])
	failedAt := time.Now()
	wg.Wait()
	for r, err := range errs {
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: %v; want a PeerError naming rank 2 with %q", r, err, want)
		}
		if d := time.Since(failedAt); d > limit+time.Second {
			t.Errorf("rank %d noticed after %v", r, d)
		}
	}
}

func TestTCPWrongSecretIsRefused(t *testing.T) {
	var logged strings.Builder
	var mu sync.Mutex
	comms, errs := connectAll(t, 2, func(rank int, o *Options) {
		o.StartTimeout = time.Second
		if rank == 1 {
			o.Secret = []byte("guess")
		} else {
			o.Logf = func(f string, a ...any) { mu.Lock(); fmt.Fprintf(&logged, f+"\n", a...); mu.Unlock() }
		}
	})
	if comms[0] != nil || comms[1] != nil {
		t.Fatal("a rank without the secret joined")
	}
	if !errors.Is(errs[1], ErrAuth) {
		t.Errorf("rank 1: %v; want an authentication error", errs[1])
	}
	if !strings.Contains(errs[0].Error(), "rank 1 never arrived") {
		t.Errorf("rank 0: %v; want it to name rank 1", errs[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "refused connection") {
		t.Errorf("rank 0 logged %q; want the refusal", logged.String())
	}
}

func TestTCPMissingRankIsNamed(t *testing.T) {
	_, errs := connectAll(t, 4, func(rank int, o *Options) {
		o.StartTimeout = 500 * time.Millisecond
		if rank == 2 || rank == 3 {
			o.Rank = -1
		}
	})
	for r := range 2 {
		if errs[r] == nil || !strings.Contains(errs[r].Error(), "ranks 2, 3 never arrived") {
			t.Errorf("rank %d: %v; want it to name ranks 2 and 3", r, errs[r])
		} else {
			onePrefix(t, fmt.Sprintf("rank %d's error", r), errs[r].Error()) // rank 1 quotes rank 0's
		}
	}
}

// rawPeer connects rank 0 of a 2-rank communicator to a test-controlled
// socket that plays rank 1.
func rawPeer(t *testing.T) (*TCP, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	other, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	o := quick(t)
	o.Rank, o.Size = 0, 2
	o.setDefaults()
	c := newTCP(o, []net.Conn{nil, mine})
	t.Cleanup(func() { c.Close(); other.Close() })
	return c, other
}

func TestTCPBadFramesEndTheCall(t *testing.T) {
	good := func() []byte { return appendFrame(nil, frameData, 0, siteTag("g"), 1, make([]byte, 8)) }
	cases := []struct {
		name  string
		frame func() []byte
		want  string
	}{
		{"payload checksum", func() []byte { f := good(); f[frameHeaderLen+7] ^= 1; return f }, "payload checksum"},
		{"header checksum", func() []byte { f := good(); f[5] ^= 1; return f }, "header checksum"},
		{"too large", func() []byte {
			h := frameHeader{typ: frameData, length: 1 << 31, seq: 1}
			var b [frameHeaderLen]byte
			h.encode(&b)
			return b[:]
		}, "exceeds"},
		{"truncated", func() []byte { return good()[:frameHeaderLen+5] }, "connection closed"},
		{"unknown type", func() []byte { return appendFrame(nil, 9, 0, 0, 1, nil) }, "unknown type"},
		{"garbage control", func() []byte { return appendFrame(nil, frameControl, 0, 0, 0, []byte("{{")) }, "control message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, other := rawPeer(t)
			other.Write(tc.frame())
			if tc.name == "truncated" {
				other.Close()
			}
			err := c.AllReduce("g", make([]float32, 4))
			var pe *PeerError
			if !errors.As(err, &pe) || pe.Rank != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want a PeerError for rank 1 mentioning %q", err, tc.want)
			}
		})
	}
}

func TestTCPCallsAfterCloseFail(t *testing.T) {
	comms := mesh(t, 2)
	comms[0].Close()
	if err := comms[0].Barrier("b"); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

// A peer that stops responding (a stopped or hung process, a dead host
// whose connection never closes) is declared lost after PeerTimeout, both
// while a call waits for it and while nothing is going on.
func TestTCPSilentPeerIsLost(t *testing.T) {
	for _, inCall := range []bool{true, false} {
		c, _ := rawPeer(t)
		start := time.Now()
		var err error
		if inCall {
			err = c.AllReduce("g", make([]float32, 4))
		} else {
			time.Sleep(c.opt.PeerTimeout + 500*time.Millisecond)
			err = c.Barrier("b")
		}
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 || !strings.Contains(err.Error(), "silent") {
			t.Fatalf("in call %v: got %v; want rank 1 lost as silent", inCall, err)
		}
		if d := time.Since(start); d > c.opt.PeerTimeout+time.Second {
			t.Fatalf("in call %v: noticed after %v", inCall, d)
		}
	}
}

// A rank declared lost while it is alive (here: silent for longer than
// its peer trusts a silent peer) is told so: its error names itself, as
// the peer saw it, not the peer whose connection then closes.
func TestTCPRankDeclaredLostIsTold(t *testing.T) {
	forLinks(t, func(t *testing.T, link string) {
		if strings.HasPrefix(link, linkShm) && hostIdentity() == "" {
			t.Skip("no shared memory on this system")
		}
		comms, errs := connectAll(t, 2, func(rank int, o *Options) {
			linkOptions(link, o)
			if rank == 0 {
				o.PeerTimeout, o.HeartbeatInterval = 300*time.Millisecond, 100*time.Millisecond
			} else { // heartbeats too seldom for rank 0
				o.PeerTimeout, o.HeartbeatInterval = 10*time.Second, 5*time.Second
			}
		})
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		deadline := time.Now().Add(5 * time.Second)
		for comms[1].Err() == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		err := comms[1].Err()
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 || !strings.Contains(err.Error(), "reported by rank 0") || !strings.Contains(err.Error(), "silent") {
			t.Fatalf("rank 1: %v; want it to name itself, reported silent by rank 0", err)
		}
		onePrefix(t, "rank 1's error", err.Error()) // it quotes rank 0's
		if err := comms[0].Err(); !errors.As(err, &pe) || pe.Rank != 1 {
			t.Fatalf("rank 0: %v; want rank 1 lost", err)
		}
	})
}

func pipePair(t *testing.T) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// A rank that aborts for a reason of its own tells its peers the reason:
// their calls fail naming it, as aborted rather than lost.
func TestTCPAbortSendsTheReason(t *testing.T) { forLinks(t, testAbort) }

func testAbort(t *testing.T, link string) {
	comms := meshOver(t, 3, link)
	comms[0].Abort(errors.New("disk full"))
	for _, c := range comms[1:] {
		err := c.Barrier("b")
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 0 || !errors.Is(err, ErrPeerAborted) || !strings.HasPrefix(err.Error(), "comm: rank 0: ") || !strings.Contains(err.Error(), "aborted: disk full") {
			t.Errorf("rank %d: %v", c.Rank(), err)
		}
	}
}
