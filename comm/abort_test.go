package comm

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

// When a group is aborted while a peer reads this rank's message in its
// own buffer, this rank's AllToAllVisit returns only once the peer is done
// with it: the caller may then reuse the buffer. (It used to return at
// the abort while the peer read on: a data race, which go test -race
// reports, and the peer saw the buffer's next contents.)
func TestAllToAllVisitAbortedReadsNoBufferAfterReturn(t *testing.T) {
	const size = 3
	boom := errors.New("rank 2 fails")
	send := make([][][]byte, size) // send[me][p]
	for me := range size {
		send[me] = make([][]byte, size)
		for p := range size {
			send[me][p] = bytes.Repeat([]byte{byte(10*me + p)}, 1024)
		}
	}
	err := Run(size, func(c Communicator) error {
		me := c.Rank()
		if me == 2 {
			time.Sleep(20 * time.Millisecond)
			return boom
		}
		d, _ := DirectOf(c)
		var bad error
		err := d.AllToAllVisit("visit", send[me], func(p int, msg []byte) {
			if me == 1 && p == 0 {
				time.Sleep(150 * time.Millisecond) // rank 0 is aborted meanwhile
			}
			got := append([]byte(nil), msg...)
			if i := bytes.IndexFunc(got, func(r rune) bool { return r != rune(10*p+me) }); i >= 0 {
				bad = fmt.Errorf("rank %d read %d in rank %d's message, which it sent as %d", me, got[i], p, 10*p+me)
			}
		})
		if err == nil {
			return errors.New("AllToAllVisit returned no error when rank 2 failed")
		}
		// The call has returned: the buffers are the caller's again.
		for p := range send[me] {
			copy(send[me][p], bytes.Repeat([]byte{0xff}, len(send[me][p])))
		}
		if bad != nil {
			return bad
		}
		return err
	})
	if err == nil || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want rank 2's", err)
	}
}

// As AllToAllVisit, AllToAllRows: a rank that comes to the call after its
// peer's call ended on an abort does not copy the peer's rows from its
// buffer, which the peer's caller has reused by then. (It used to copy them
// whenever its own sends got through before it saw the abort, half the
// time for one peer: the trials make a miss unlikely.)
func TestAllToAllRowsAbortedReadsNoBufferAfterReturn(t *testing.T) {
	const rowSize, rows, trials = 8, 64, 12
	boom := errors.New("the run fails")
	for trial := range trials {
		g := NewGroup(2)
		src := [2][]byte{bytes.Repeat([]byte{1}, rowSize*rows), bytes.Repeat([]byte{2}, rowSize*rows)}
		at := [2][][]int32{make([][]int32, 2), make([][]int32, 2)}
		for i := range int32(rows) {
			at[0][1] = append(at[0][1], i)
			at[1][0] = append(at[1][0], i)
		}
		errs := make(chan error, 2)
		rank := func(r int) {
			d, _ := DirectOf(g.Comm(r))
			recv := make([][]byte, 2)
			err := d.AllToAllRows("rows", src[r], rowSize, at[r][:], recv)
			if r == 0 {
				copy(src[0], bytes.Repeat([]byte{0xff}, len(src[0]))) // the call has returned: the rows are the caller's again
			}
			if err == nil {
				err = fmt.Errorf("rank %d: AllToAllRows returned no error after the abort", r)
			} else if i := bytes.IndexByte(recv[0], 0xff); r == 1 && i >= 0 {
				err = fmt.Errorf("rank 1 copied byte %d of rank 0's rows after rank 0's call returned", i)
			}
			errs <- err
		}
		// Rank 0 offers rank 1 its rows and waits for rank 1's; the group
		// is aborted; once rank 0 has left the call, rank 1 comes. Nothing
		// orders rank 0's reuse of its rows before rank 1's call.
		go rank(0)
		waitFor(t, g, func() bool { return g.calls[0].kind == "AllToAllRows" && len(g.mail[0][1]) == 1 })
		g.Abort(boom)
		waitFor(t, g, func() bool { return g.calls[0].kind == "" })
		go func() {
			time.Sleep(10 * time.Millisecond) // after rank 0's reuse, most likely
			rank(1)
		}()
		for range 2 {
			if err := <-errs; !errors.Is(err, boom) {
				t.Fatalf("trial %d: %v", trial, err)
			}
		}
	}
}

// waitFor waits until cond, which reads g's state, holds, calling it with
// g's call states locked.
func waitFor(t *testing.T, g *Group, cond func() bool) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(100 * time.Microsecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("waited 10 s")
		}
		g.callsMu.Lock()
		ok := cond()
		g.callsMu.Unlock()
		if ok {
			return
		}
	}
}
