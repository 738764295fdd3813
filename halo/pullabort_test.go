package halo

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/tensor"
)

// When the group is aborted while a peer is reading this part's gradient
// message (AllToAllPull), this part's Backward returns with the error; the
// peer must not call its fill afterwards (it used to, through makeGrad,
// after backwardPull had cleared gradDH and gradFill: a nil dereference
// on the peer's goroutine, which crashed the process instead of failing
// the run).
func TestPullAbortedCallsNoFillAfterReturn(t *testing.T) {
	const n, k, w = 150, 3, rowChunk // a piece is one row
	_, l := testLayout(t, n, k, 8)
	if len(l.Parts[0].Send[1]) < 2 {
		t.Skip("rank 0 sends rank 1 fewer than two rows")
	}
	returned := make(chan struct{}) // rank 0's Backward returned
	var once sync.Once
	var mu sync.Mutex
	var late []string
	boom := errors.New("rank 2 fails")
	err := comm.Run(k, func(c comm.Communicator) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic on rank %d: %v", c.Rank(), r)
			}
		}()
		p := &l.Parts[c.Rank()]
		e, err := New(c, p, Config{Seed: 1, Layers: 2})
		if err != nil {
			return err
		}
		e.Begin(0, true)
		if c.Rank() == 2 {
			time.Sleep(100 * time.Millisecond)
			return boom
		}
		own := len(p.Owned)
		dext, dh := tensor.New(own, w), tensor.New(own, w)
		var back bool
		calls := 0
		e.Backward(0, dext, dh, func(lo, hi int, out *tensor.Matrix) {
			if c.Rank() != 0 {
				return
			}
			mu.Lock()
			calls++
			first, gone := calls == 1, back
			mu.Unlock()
			if gone {
				mu.Lock()
				late = append(late, fmt.Sprintf("rows [%d, %d)", lo, hi))
				mu.Unlock()
			}
			if first { // rank 1 reads: wait until rank 0 has given up, or may have
				select {
				case <-returned:
				case <-time.After(300 * time.Millisecond):
				}
			}
		})
		if c.Rank() == 0 {
			mu.Lock()
			back = true
			mu.Unlock()
			once.Do(func() { close(returned) })
			time.Sleep(100 * time.Millisecond) // let rank 1 read on
		}
		return e.Err()
	})
	if err == nil || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want rank 2's", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(late) > 0 {
		t.Fatalf("rank 0's fill ran after its Backward returned: %v", late)
	}
}
