package comm

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// flood opens idle connections to addr, as anyone who can reach the port
// can: n at once, then one more every few milliseconds (the oldest closed
// beyond 2n) until stop is closed.
func flood(t *testing.T, addr string, n int, stop chan struct{}) *sync.WaitGroup {
	var conns []net.Conn
	open := func() {
		if c, err := net.Dial("tcp", addr); err == nil {
			conns = append(conns, c)
		}
		if len(conns) > 2*n {
			conns[0].Close()
			conns = conns[1:]
		}
	}
	for range n {
		open()
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
				open()
			}
		}
	}()
	return &wg
}

// Idle unauthenticated connections cannot keep the ranks out: they hold
// every pending-handshake slot before the ranks arrive and keep coming,
// yet the mesh forms, and rank 0's log holds a few lines counting the
// refusals rather than one line each.
func TestRendezvousSurvivesIdleConnections(t *testing.T) {
	stop := make(chan struct{})
	var wg *sync.WaitGroup
	var mu sync.Mutex
	var lines []string
	comms, errs := connectAll(t, 3, func(rank int, o *Options) {
		o.StartTimeout = 10 * time.Second
		if rank == 0 {
			wg = flood(t, o.Rendezvous, 2*maxPendingHandshakes, stop)
			o.Logf = func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() }
		}
	})
	close(stop)
	wg.Wait()
	for r, err := range errs {
		if err != nil || comms[r] == nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if err := firstErr(onEach(comms, func(c *TCP) error { return c.Barrier("after") })); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) > 10 {
		t.Fatalf("rank 0 logged %d lines for the flood:\n%s", len(lines), strings.Join(lines[:10], "\n"))
	}
	if !strings.Contains(strings.Join(lines, "\n"), "connections") {
		t.Errorf("no line counts the refused connections:\n%s", strings.Join(lines, "\n"))
	}
}

// A rank whose connection is dropped during the handshake (as a flood of
// connections makes the peer drop its oldest pending ones) dials again.
func TestDialRetriesDroppedHandshakes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if i < 3 {
				c.Close()
				continue
			}
			handshakeAccept(c, testSecret)
			defer c.Close()
		}
	}()
	o := quick(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dial(ctx, ln.Addr().String(), &o)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.Close()
}
