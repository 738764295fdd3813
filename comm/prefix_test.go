package comm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// onePrefix fails the test unless msg starts with the package's prefix
// and has it nowhere else, as every error and log line of the package
// should.
func onePrefix(t *testing.T, what, msg string) {
	t.Helper()
	if !strings.HasPrefix(msg, "comm: ") || strings.Count(msg, "comm:") != 1 {
		t.Errorf("%s %q: want one %q, at the start", what, msg, "comm: ")
	}
}

// logTo returns a Logf that keeps each line in lines.
func logTo(mu *sync.Mutex, lines *[]string) func(string, ...any) {
	return func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		*lines = append(*lines, fmt.Sprintf(f, a...))
	}
}

// A lost or aborting rank is named once with the package's prefix, in the
// errors and in the lines each rank logs: a rank's failure, and another
// rank's as this rank or a third one saw it.
func TestTCPFailuresCarryThePrefixOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(c *TCP)
		want string // what every error and rank 0's log line say of rank 2
	}{
		{"crash", crash, "lost: "},
		{"abort", func(c *TCP) { c.Abort(errors.New("disk full")) }, "aborted: disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			logs := make([][]string, 3)
			comms, errs := connectAll(t, 3, func(r int, o *Options) {
				o.Transport = TransportTCP
				o.Logf = logTo(&mu, &logs[r])
			})
			if err := firstErr(errs); err != nil {
				t.Fatal(err)
			}
			tc.fail(comms[2])
			for r, err := range onEach(comms[:2], func(c *TCP) error { return c.Barrier("b") }) {
				onePrefix(t, fmt.Sprintf("rank %d's error", r), fmt.Sprint(err))
				if !strings.HasPrefix(fmt.Sprint(err), "comm: rank 2: ") || !strings.Contains(fmt.Sprint(err), tc.want) {
					t.Errorf("rank %d: %v; want rank 2 named, with %q", r, err, tc.want)
				}
			}
			for _, c := range comms {
				c.Close() // the logging goroutines are done once it returns
			}
			mu.Lock()
			defer mu.Unlock()
			for r, lines := range logs {
				for _, l := range lines {
					onePrefix(t, fmt.Sprintf("rank %d logged", r), l)
				}
			}
			named := false
			for _, l := range logs[0] {
				named = named || strings.HasPrefix(l, "comm: rank 0: rank 2: ") && strings.Contains(l, tc.want)
			}
			if !named {
				t.Errorf("rank 0 logged %q; want a line of rank 0 naming rank 2 with %q", logs[0], tc.want)
			}
		})
	}
}

// A rank that fails to join the mesh after the rendezvous tells rank 0
// why; rank 0's error, which it also sends to every rank, quotes the
// reason under one prefix. Here rank 2 (played by the test) joins rank 0
// but never connects to rank 1, which gives up first.
func TestTCPJoinFailureCarriesThePrefixOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		o := quick(t)
		o.Rank, o.Size, o.Rendezvous = r, 3, ln.Addr().String()
		o.StartTimeout = time.Minute // rank 0 waits for rank 1's verdict
		if r == 0 {
			o.Listener = ln
		} else {
			o.StartTimeout = 500 * time.Millisecond // and 2 s more: verdictGrace
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Connect(context.Background(), o)
			if c != nil {
				c.Close()
			}
			errs[r] = err
		}()
	}
	o := quick(t)
	o.Rank, o.Size = 2, 3
	root, err := dial(context.Background(), ln.Addr().String(), &o)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	root.SetDeadline(time.Now().Add(time.Minute)) // a regression fails the test, not hangs it
	if err := writeControl(root, control{Kind: "join", Rank: 2, Size: 3, Addr: "127.0.0.1:1", Order: byteOrder}); err != nil {
		t.Fatal(err)
	}
	if m, err := readControl(root); err != nil || m.Kind != "table" {
		t.Fatalf("rank 0 sent %+v, %v; want the table", m, err)
	}
	_, toRank2 := readControl(root) // rank 0's verdict
	wg.Wait()

	want := "rank 2 never connected to rank 1"
	if errs[1] == nil || !strings.Contains(errs[1].Error(), want) {
		t.Fatalf("rank 1: %v; want %q", errs[1], want)
	}
	onePrefix(t, "rank 1's error", errs[1].Error())
	if errs[0] == nil || !strings.HasPrefix(errs[0].Error(), "comm: rank 1: could not join the mesh: ") || !strings.Contains(errs[0].Error(), want) {
		t.Fatalf("rank 0: %v; want rank 1's failure to join, with its reason %q", errs[0], want)
	}
	onePrefix(t, "rank 0's error", errs[0].Error())
	if toRank2 == nil || !strings.Contains(toRank2.Error(), want) || strings.Contains(toRank2.Error(), "comm:") {
		t.Errorf("rank 0 told rank 2 %q; want its error without the prefix, which the receiver adds", toRank2)
	}
}

// A rank declared lost by another, and told so, relays its loss to its
// peers marked as relayed: they report it lost, as it does, where a rank
// that stops for a reason of its own (Abort, or a failure of its own) is
// reported as aborted. Both ends are checked against a socket playing
// rank 1.
func TestRelayedLossIsALoss(t *testing.T) {
	// Receiving: an abort from rank 1 naming itself.
	for _, tc := range []struct {
		name    string
		msg     string
		aborted bool
	}{
		{"relayed", `{"kind":"abort","rank":1,"lost":1,"relayed":true,"reason":"reported by rank 0: lost: silent for 2s"}`, false},
		{"aborted", `{"kind":"abort","rank":1,"lost":1,"aborted":true,"reason":"disk full"}`, true},
		{"own failure", `{"kind":"abort","rank":1,"lost":1,"reason":"shared memory: no space left"}`, true},
	} {
		c, other := rawPeer(t)
		other.Write(appendFrame(nil, frameControl, 0, 0, 0, []byte(tc.msg)))
		err := c.Barrier("b")
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 || errors.Is(err, ErrPeerAborted) != tc.aborted {
			t.Errorf("%s: %v; want rank 1, aborted %v", tc.name, err, tc.aborted)
		}
		onePrefix(t, tc.name, err.Error())
	}
	// Sending: rank 0 told it is lost relays it marked; its own abort is not.
	for _, tc := range []struct {
		name    string
		err     error
		relayed bool
	}{
		{"declared lost", &PeerError{Rank: 0, Err: reportedError{by: 1, reason: "lost: silent for 2s"}}, true},
		{"aborted", &PeerError{Rank: 0, Err: abortError{"disk full"}}, false},
		{"another rank lost", &PeerError{Rank: 1, Err: errors.New("lost: connection closed")}, false},
	} {
		c, other := rawPeer(t)
		c.fail(tc.err)
		other.SetReadDeadline(time.Now().Add(time.Minute))
		var m control
		for m.Kind != "abort" {
			h, payload, err := readFrame(other, 1<<20, nil)
			if err != nil {
				t.Fatalf("%s: reading rank 0's frames: %v", tc.name, err)
			}
			if h.typ == frameControl {
				if err := json.Unmarshal(payload, &m); err != nil {
					t.Fatal(err)
				}
			}
		}
		if m.Relayed != tc.relayed {
			t.Errorf("%s: rank 0 sent %+v; want relayed %v", tc.name, m, tc.relayed)
		}
	}
}
