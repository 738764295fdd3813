package commtest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
)

// TCP connects size ranks over TCP on 127.0.0.1, rank 0 holding the
// rendezvous, and runs rank(c) for each in a goroutine of its own. A rank
// whose function fails aborts its communicator, so that the others end
// with an error rather than wait on it. TCP returns when every rank has
// ended, with each rank's error (nil where it succeeded, the connection's
// error where it never connected, the listener's for all when there was
// none).
func TCP(t testing.TB, size int, secret string, rank func(c comm.Communicator) error) []error {
	t.Helper()
	errs := make([]error, size)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil { // every rank's error: callers may run TCP off the test's goroutine
		for r := range errs {
			errs[r] = err
		}
		return errs
	}
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := comm.Options{Rank: r, Size: size, Rendezvous: ln.Addr().String(), Secret: []byte(secret),
				StartTimeout: 10 * time.Second, PeerTimeout: 5 * time.Second, Logf: t.Logf}
			if r == 0 {
				o.Listener = ln
			}
			c, err := comm.Connect(context.Background(), o)
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			if errs[r] = rank(c); errs[r] != nil {
				c.Abort(errs[r])
			}
		}()
	}
	wg.Wait()
	ln.Close() // closed already once the mesh formed; not if it never did
	return errs
}
