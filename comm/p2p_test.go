package comm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// p2pTransports runs fn on every rank of a group of size ranks, in process
// and over each of testLinks, and returns each rank's error.
var p2pTransports = []struct {
	name string
	run  func(t *testing.T, size int, fn func(c Communicator) error) []error
}{
	{"group", func(t *testing.T, size int, fn func(c Communicator) error) []error {
		g := NewGroup(size)
		errs := make([]error, size)
		var wg sync.WaitGroup
		for r := range size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer g.finished(r)
				errs[r] = fn(g.Comm(r))
			}()
		}
		wg.Wait()
		return errs
	}},
	{"tcp", func(t *testing.T, size int, fn func(c Communicator) error) []error {
		return onEach(meshOver(t, size, TransportTCP), func(c *TCP) error { return fn(c) })
	}},
	{"shm", func(t *testing.T, size int, fn func(c Communicator) error) []error {
		return onEach(meshOver(t, size, linkShm), func(c *TCP) error { return fn(c) })
	}},
	{"shm-page", func(t *testing.T, size int, fn func(c Communicator) error) []error {
		return onEach(meshOver(t, size, "shm-page"), func(c *TCP) error { return fn(c) })
	}},
}

// message i from rank r: lengths cover empty messages and, once, one
// that travels as several frames.
func p2pPayload(r, i int) []byte {
	n := (r*131 + i*17) % 300
	switch i {
	case 0:
		n = 0
	case 7:
		n = 2*maxDataPayload + 5
	}
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(r*31 + i*7 + j)
	}
	return b
}

func TestP2PMessagesArriveInOrderPerSender(t *testing.T) {
	const size, count = 3, 40
	for _, tr := range p2pTransports {
		t.Run(tr.name, func(t *testing.T) {
			errs := tr.run(t, size, func(c Communicator) error {
				if c.Rank() != 0 {
					for i := range count {
						if err := c.Send("push", 0, p2pPayload(c.Rank(), i)); err != nil {
							return err
						}
					}
					// One more on another site, received last although sent last too.
					return c.Send("other", 0, []byte{byte(c.Rank())})
				}
				next := make([]int, size)
				var bytesIn int64
				for range (size - 1) * count {
					from, msg, err := c.Recv("push", AnyRank, time.Now().Add(10*time.Second))
					if err != nil {
						return err
					}
					if want := p2pPayload(from, next[from]); !bytes.Equal(msg, want) {
						return fmt.Errorf("message %d from rank %d: %d bytes, want %d (out of order or corrupt)", next[from], from, len(msg), len(want))
					}
					next[from]++
					bytesIn += int64(len(msg))
				}
				for r := size - 1; r >= 1; r-- { // a given sender, not the first to come
					from, msg, err := c.Recv("other", r, time.Now().Add(10*time.Second))
					if err != nil {
						return err
					}
					if from != r || len(msg) != 1 || msg[0] != byte(r) {
						return fmt.Errorf("Recv(other, %d) = rank %d, %v", r, from, msg)
					}
				}
				if st := c.Stats().Site("push"); st.Calls != (size-1)*count || st.BytesReceived != bytesIn {
					return fmt.Errorf("push site: %d calls, %d bytes received; want %d, %d", st.Calls, st.BytesReceived, (size-1)*count, bytesIn)
				}
				return nil
			})
			if err := firstErr(errs); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestP2PRecvDeadline(t *testing.T) {
	for _, tr := range p2pTransports {
		t.Run(tr.name, func(t *testing.T) {
			errs := tr.run(t, 2, func(c Communicator) error {
				if c.Rank() == 1 {
					// Sends on another site only, after rank 0 has given up.
					_, _, err := c.Recv("go", 0, time.Now().Add(10*time.Second))
					if err != nil {
						return err
					}
					return c.Send("elsewhere", 0, []byte("late"))
				}
				const wait = 200 * time.Millisecond
				start := time.Now()
				_, _, err := c.Recv("quiet", AnyRank, start.Add(wait))
				took := time.Since(start)
				if !errors.Is(err, ErrDeadline) || !strings.Contains(err.Error(), "quiet") {
					return fmt.Errorf("Recv with nobody sending: %v; want ErrDeadline naming the site", err)
				}
				if took < wait || took > wait+time.Second {
					return fmt.Errorf("Recv returned after %v for a %v deadline", took, wait)
				}
				if err := c.Send("go", 1, nil); err != nil {
					return err
				}
				_, msg, err := c.Recv("elsewhere", 1, time.Now().Add(10*time.Second))
				if err != nil || string(msg) != "late" {
					return fmt.Errorf("Recv after a deadline: %q, %v", msg, err)
				}
				return nil
			})
			if err := firstErr(errs); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestP2PBadRankIsAnError(t *testing.T) {
	for _, tr := range p2pTransports {
		t.Run(tr.name, func(t *testing.T) {
			errs := tr.run(t, 2, func(c Communicator) error {
				if err := c.Send("s", 2, nil); err == nil || !strings.Contains(err.Error(), "outside") {
					return fmt.Errorf("Send to rank 2 of 2: %v", err)
				}
				if _, _, err := c.Recv("s", -2, time.Now()); err == nil || !strings.Contains(err.Error(), "outside") {
					return fmt.Errorf("Recv from rank -2: %v", err)
				}
				// A message to itself is delivered like any other.
				if err := c.Send("self", c.Rank(), []byte("me")); err != nil {
					return err
				}
				from, msg, err := c.Recv("self", AnyRank, time.Now().Add(5*time.Second))
				if err != nil || from != c.Rank() || string(msg) != "me" {
					return fmt.Errorf("message to itself: rank %d, %q, %v", from, msg, err)
				}
				return nil
			})
			if err := firstErr(errs); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Collectives in one goroutine and point-to-point messages in another, on
// every rank at once, each get their own results.
func TestP2PAndCollectivesConcurrently(t *testing.T) {
	const size, rounds = 3, 30
	for _, tr := range p2pTransports {
		t.Run(tr.name, func(t *testing.T) {
			errs := tr.run(t, size, func(c Communicator) error {
				r := c.Rank()
				var wg sync.WaitGroup
				var collErr error
				wg.Add(1)
				go func() {
					defer wg.Done()
					send, recv := make([][]byte, size), make([][]byte, size)
					for i := range rounds {
						for p := range send {
							send[p] = fmt.Appendf(send[p][:0], "%d to %d in %d", r, p, i)
						}
						if err := c.AllToAll("exchange", send, recv); err != nil {
							collErr = err
							return
						}
						for p := range recv {
							if want := fmt.Sprintf("%d to %d in %d", p, r, i); string(recv[p]) != want {
								collErr = fmt.Errorf("all-to-all from %d: %q, want %q", p, recv[p], want)
								return
							}
						}
					}
				}()
				var p2pErr error
				for i := range rounds {
					msg := fmt.Appendf(nil, "%d from %d", i, r)
					if p2pErr = c.Send("ring", (r+1)%size, msg); p2pErr != nil {
						break
					}
					left := (r + size - 1) % size
					_, got, err := c.Recv("ring", left, time.Now().Add(10*time.Second))
					if err != nil {
						p2pErr = err
						break
					}
					if want := fmt.Sprintf("%d from %d", i, left); string(got) != want {
						p2pErr = fmt.Errorf("got %q, want %q", got, want)
						break
					}
				}
				wg.Wait()
				return errors.Join(collErr, p2pErr)
			})
			if err := firstErr(errs); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A rank waiting for a message from a peer that has finished, or failed,
// gets an error naming the peer, not a hang.
func TestP2PDeadPeerIsNamed(t *testing.T) {
	t.Run("group finished", func(t *testing.T) {
		err := Run(2, func(c Communicator) error {
			if c.Rank() == 1 {
				return nil
			}
			_, _, err := c.Recv("s", 1, time.Time{})
			var pe *PeerError
			if !errors.As(err, &pe) || pe.Rank != 1 {
				return fmt.Errorf("Recv from a finished rank: %v; want a PeerError naming rank 1", err)
			}
			_, _, err = c.Recv("s", AnyRank, time.Time{})
			if err == nil || !strings.Contains(err.Error(), "every other rank") {
				return fmt.Errorf("Recv from any rank once all finished: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("group failed", func(t *testing.T) {
		var got error
		Run(2, func(c Communicator) error {
			if c.Rank() == 1 {
				time.Sleep(50 * time.Millisecond)
				return errors.New("out of memory")
			}
			_, _, got = c.Recv("s", AnyRank, time.Time{})
			return got
		})
		if !errors.Is(got, ErrAborted) || !strings.Contains(got.Error(), "rank 1: out of memory") {
			t.Fatalf("Recv while a peer fails: %v; want the abort naming rank 1", got)
		}
	})
	for _, tc := range []struct {
		name string
		fail func(c *TCP)
		want string
	}{
		{"tcp close", func(c *TCP) { c.Close() }, "closed its communicator"},
		{"tcp crash", func(c *TCP) {
			for _, p := range c.peers {
				if p != nil {
					p.conn.Close()
				}
			}
		}, "rank 2"},
	} {
		forLinks(t, func(t *testing.T, link string) {
			t.Run(tc.name, func(t *testing.T) { testP2PDeadPeer(t, link, tc.fail, tc.want) })
		})
	}
}

func testP2PDeadPeer(t *testing.T, link string, fail func(c *TCP), want string) {
	comms := meshOver(t, 3, link)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[r] = comms[r].Recv("s", 2, time.Now().Add(20*time.Second))
		}()
	}
	if err := comms[2].Send("s", 0, []byte("one")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	fail(comms[2])
	failedAt := time.Now()
	wg.Wait()
	if errs[0] != nil {
		t.Errorf("rank 0: %v; want the message sent before the failure", errs[0])
	}
	var pe *PeerError
	if !errors.As(errs[1], &pe) || pe.Rank != 2 || !strings.Contains(errs[1].Error(), want) {
		t.Errorf("rank 1: %v; want a PeerError naming rank 2 with %q", errs[1], want)
	}
	if d := time.Since(failedAt); d > 4*time.Second {
		t.Errorf("noticed after %v", d)
	}
	if err := comms[1].Send("s", 2, nil); err == nil {
		t.Errorf("Send to the lost rank succeeded")
	}
}
