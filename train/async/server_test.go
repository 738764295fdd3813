package async

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
)

// fakeWorker sends a server requests by hand and reads its replies.
type fakeWorker struct {
	c      comm.Communicator
	server int
}

func (w fakeWorker) send(r request) error { return w.c.Send(RequestSite, w.server, r.encode()) }

func (w fakeWorker) reply() (reply, error) {
	_, msg, err := w.c.Recv(ReplySite, w.server, time.Now().Add(10*time.Second))
	if err != nil {
		return reply{}, fmt.Errorf("worker rank %d: %w", w.c.Rank(), err)
	}
	return decodeReply(msg, nil)
}

// start pulls with one batch an epoch and reads the first parameters.
func (w fakeWorker) start() error {
	if err := w.send(request{kind: kindPull, version: 1}); err != nil {
		return err
	}
	_, err := w.reply()
	return err
}

// A synchronous server that holds a worker's gradient when worker 0 stops
// the run applies it never: it answers that worker at once with stop and
// the parameters as they were, and counts no push, no update and no
// staleness; the bytes of every push received are counted all the same.
func TestSyncServerStepsNoMoreAfterStop(t *testing.T) {
	sh := shard(t, "none", -1)
	start := sh.AppendValues(nil)
	const server = 2
	var counters Counters
	pushed := make(chan struct{})
	err := comm.Run(3, func(c comm.Communicator) error {
		w := fakeWorker{c, server}
		switch c.Rank() {
		case server:
			var err error
			counters, err = Serve(c, sh, ServerConfig{Workers: []int{0, 1}, Timeout: 10 * time.Second, Sync: true, Epochs: 100})
			return err
		case 1:
			// Pushes a gradient, which the server holds for worker 0's.
			if err := w.start(); err != nil {
				return err
			}
			if err := w.send(request{kind: kindPush, version: 0, grad: []float32{1, 1, 1}}); err != nil {
				return err
			}
			close(pushed)
			r, err := w.reply()
			if err != nil {
				return err
			}
			if !r.stop || r.version != 0 || !slices.Equal(r.values, start) {
				return fmt.Errorf("worker 1's held gradient answered with stop %v at version %d, values %v; want stop at version 0, values %v", r.stop, r.version, r.values, start)
			}
			return w.send(request{kind: kindDone})
		}
		// Worker 0 stops the run after worker 1's push, pushes once more
		// (a step that was in flight) and is done.
		if err := w.start(); err != nil {
			return err
		}
		<-pushed
		if err := w.send(request{kind: kindStop}); err != nil {
			return err
		}
		if err := w.send(request{kind: kindPush, version: 0, grad: []float32{5, 5, 5}}); err != nil {
			return err
		}
		r, err := w.reply()
		if err != nil {
			return err
		}
		if !r.stop || r.version != 0 || !slices.Equal(r.values, start) {
			return fmt.Errorf("worker 0's push after its stop answered with stop %v at version %d, values %v", r.stop, r.version, r.values)
		}
		return w.send(request{kind: kindDone})
	})
	if err != nil {
		t.Fatal(err)
	}
	if counters.Pushes != 0 || counters.Updates != 0 || counters.Staleness.Count() != 0 || counters.BytesGrad != 2*(9+4*3) {
		t.Fatalf("counters %+v; want no push, update or staleness counted, and the bytes of two pushes of 3 values", counters)
	}
	if got := sh.AppendValues(nil); !slices.Equal(got, start) {
		t.Fatalf("the shard holds %v after the stop; it started at %v", got, start)
	}
}

// When the servers' final counters do not come, worker 0 still reports
// the run's last epoch, held for them, with the figures of its last
// report, and says why the counters are missing.
func TestHeldEpochReportedWithoutFinalCounters(t *testing.T) {
	c := comm.NewGroup(2).Comm(0) // rank 1, the server, never answers
	var got []metrics.Epoch
	r := &reporter{c: c, servers: []int{1}, opts: Options{Timeout: 50 * time.Millisecond},
		prev:    Counters{BytesGrad: 300, BytesParams: 500},
		held:    &heldEpoch{e: metrics.Epoch{Epoch: 7}, before: Counters{BytesGrad: 100, BytesParams: 200}},
		onEpoch: func(e metrics.Epoch) error { got = append(got, e); return nil }}
	err := r.finish(nil)
	if err == nil {
		t.Error("finish without the final counters: no error")
	}
	if len(got) != 1 || got[0].Epoch != 7 || got[0].BytesGrad != 200 || got[0].BytesParams != 300 {
		t.Errorf("reported %+v; want epoch 7 with 200 bytes of gradients and 300 of parameters", got)
	}
}
