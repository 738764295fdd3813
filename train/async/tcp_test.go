package async

import (
	"context"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/comm/commtest"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train/traintest"
)

// The parameter server over TCP: one worker and two servers, each rank
// with its own communicator over loopback connections, train exactly as
// the same ranks in one Group, and four workers finish with every
// gradient counted.
func TestOverTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("forms TCP meshes")
	}
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	for _, workers := range []int{1, 4} {
		opts := Options{Workers: workers, Servers: 2, MaxStaleness: -1, Timeout: 30 * time.Second, NewStepper: stepperFactory(t, cfg, p, workers)}
		want, err := Run(context.Background(), cfg, p, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		size := workers + 2
		results := make([]Result, size)
		var epochs []metrics.Epoch
		errs := commtest.TCP(t, size, "async test", func(c comm.Communicator) (err error) {
			results[c.Rank()], err = RunRank(context.Background(), c, cfg, p, opts, func(e metrics.Epoch) error {
				epochs = append(epochs, e)
				return nil
			})
			return err
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("%d workers: rank %d: %v", workers, r, err)
			}
		}
		var counted int64
		for _, r := range results[workers:] {
			counted += r.Counters.Staleness.Count()
		}
		if counted != want.Counters.Staleness.Count() || len(epochs) == 0 || epochs[len(epochs)-1].Epoch != cfg.Epochs {
			t.Fatalf("%d workers: %d gradients counted over TCP, %d in process; %d epoch records", workers, counted, want.Counters.Staleness.Count(), len(epochs))
		}
		// The same bytes: a push to every server is 9·2 bytes of headers
		// and 4 a value, a reply from every server 25·2 and 4 a value;
		// each worker pulls once, and every push is answered.
		var end Counters
		for _, r := range results[workers:] {
			end.add(r.Counters)
		}
		pushSize, replySize := int64(18+4*len(want.Final)), int64(50+4*len(want.Final))
		pushes := end.BytesGrad / pushSize
		if end.BytesGrad != pushes*pushSize || end.BytesParams != (int64(workers)+pushes)*replySize || pushes < int64(cfg.Epochs)*want.Counters.EpochSize {
			t.Fatalf("%d workers: over TCP the servers counted %d bytes of gradients and %d of parameters", workers, end.BytesGrad, end.BytesParams)
		}
		var grad, sent int64
		for _, e := range epochs {
			grad, sent = grad+e.BytesGrad, sent+e.BytesParams
		}
		if grad != results[0].Counters.BytesGrad || sent != results[0].Counters.BytesParams || grad <= 0 || sent <= 0 {
			t.Fatalf("%d workers: the epochs report %d and %d bytes, worker 0's last report %+v", workers, grad, sent, results[0].Counters)
		}
		if workers == 1 && (end.BytesGrad != want.Counters.BytesGrad || end.BytesParams != want.Counters.BytesParams || grad != end.BytesGrad || sent != end.BytesParams) {
			t.Fatalf("one worker: %d and %d bytes counted over TCP (%d and %d reported), %d and %d in process",
				end.BytesGrad, end.BytesParams, grad, sent, want.Counters.BytesGrad, want.Counters.BytesParams)
		}
		if workers == 1 {
			for i := range want.Final {
				if results[0].Final[i] != want.Final[i] {
					t.Fatalf("parameter value %d: %v over TCP, %v in process", i, results[0].Final[i], want.Final[i])
				}
			}
		}
	}
}
