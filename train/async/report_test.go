package async

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/traintest"
)

// watched is a communicator that calls onSend before every Send and
// onRecv after every Recv.
type watched struct {
	comm.Communicator
	onSend func(site string, msg []byte)
	onRecv func(site string, msg []byte)
}

func (c watched) Send(site string, to int, msg []byte) error {
	if c.onSend != nil {
		c.onSend(site, msg)
	}
	return c.Communicator.Send(site, to, msg)
}

func (c watched) Recv(site string, from int, deadline time.Time) (int, []byte, error) {
	src, msg, err := c.Communicator.Recv(site, from, deadline)
	if err == nil && c.onRecv != nil {
		c.onRecv(site, msg)
	}
	return src, msg, err
}

// The run's last epoch is reported with the parameters the run ends with,
// also when the servers' counters show every gradient in before worker 0
// has them: worker 0 then reports nothing until the servers say stop, and
// the last epoch's record covers every gradient since the report before.
// Here worker 1 waits until worker 0 has pushed an epoch's gradients alone
// and asks the servers for their counters; that request waits until
// worker 1 has pushed the second, and last, epoch's.
func TestLastEpochEvaluatesTheFinalParameters(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Optimizer.LR = 2, 0.03
	newStepper := stepperFactory(t, cfg, p, 2)
	start, full := make(chan struct{}), make(chan struct{})
	var asked, stopped sync.Once
	opts := Options{Workers: 2, Servers: 1, MaxStaleness: -1, Timeout: 10 * time.Second, NewStepper: func(w int) (train.Stepper, error) {
		st, err := newStepper(w)
		if err != nil || w == 0 {
			return st, err
		}
		return &hookedStepper{Stepper: st, hook: func(int) error { <-start; return nil }}, nil
	}}
	var res Result
	var epochs []metrics.Epoch
	err := comm.Run(3, func(c comm.Communicator) error {
		w := watched{Communicator: c}
		switch c.Rank() {
		case 0:
			w.onSend = func(site string, msg []byte) {
				if site == RequestSite && msg[0] == kindStats {
					asked.Do(func() { close(start); <-full })
				}
			}
		case 1:
			w.onRecv = func(site string, msg []byte) {
				if site != ReplySite {
					return
				}
				if r, err := decodeReply(msg, nil); err == nil && r.stop {
					stopped.Do(func() { close(full) })
				}
			}
		}
		r, err := RunRank(context.Background(), w, cfg, p, opts, func(e metrics.Epoch) error { epochs = append(epochs, e); return nil })
		if c.Rank() == 0 {
			res = r
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := newStepper(0)
	if err != nil {
		t.Fatal(err)
	}
	loop, err := train.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for _, q := range st.Model().Params() {
		off += copy(q.Value.Data, res.Final[off:])
	}
	want, err := loop.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	last := epochs[len(epochs)-1]
	if last.Epoch != cfg.Epochs || last.ValLoss != want.ValLoss || res.Epochs != cfg.Epochs {
		t.Fatalf("the last epoch reported is %d of %d with a validation loss of %v; the final parameters' is %v", last.Epoch, cfg.Epochs, last.ValLoss, want.ValLoss)
	}
	// Worker 1's gradients came in after worker 0's report before the
	// last, if any: they are the last epoch's.
	if last.UpdatesPerSecond <= 0 {
		t.Fatalf("%d epochs reported, the last with no update: %+v", len(epochs), last)
	}
}
