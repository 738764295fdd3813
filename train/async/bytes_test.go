package async

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/traintest"
)

// tally counts, per server rank, the requests sent to it by kind and the
// replies it sends, as they go through the communicator, and the bytes of
// every push and of every reply carrying parameters.
type tally struct {
	mu       sync.Mutex
	requests map[int]map[byte]int64 // server → kind → messages
	replies  map[int]int64          // server → messages
	// Bytes of the pushes and of the replies with parameters (not those
	// with counters, which begin with their tag), and of the pushes sent
	// after worker 0's first stop.
	pushBytes, paramBytes, lateBytes int64
	stopped                          bool
}

// tallied is a communicator that tallies every Send.
type tallied struct {
	comm.Communicator
	t *tally
}

func (c tallied) Send(site string, to int, msg []byte) error {
	c.t.mu.Lock()
	switch site {
	case RequestSite:
		if c.t.requests[to] == nil {
			c.t.requests[to] = map[byte]int64{}
		}
		c.t.requests[to][msg[0]]++
		switch msg[0] {
		case kindPush:
			c.t.pushBytes += int64(len(msg))
			if c.t.stopped {
				c.t.lateBytes += int64(len(msg))
			}
		case kindStop:
			c.t.stopped = true
		}
	case ReplySite:
		c.t.replies[c.Rank()]++
		if len(msg) < 8 || binary.LittleEndian.Uint64(msg)&^0xffff != countersTag {
			c.t.paramBytes += int64(len(msg))
		}
	}
	c.t.mu.Unlock()
	return c.Communicator.Send(site, to, msg)
}

// tallyRun runs every rank in one group through RunRank, as Run does,
// with every Send tallied. It returns every rank's result and worker 0's
// epochs.
func tallyRun(t *testing.T, cfg train.Config, p train.Problem, opts Options) ([]Result, []metrics.Epoch, *tally) {
	t.Helper()
	tl := &tally{requests: map[int]map[byte]int64{}, replies: map[int]int64{}}
	results := make([]Result, opts.Workers+opts.Servers)
	var epochs []metrics.Epoch
	err := comm.Run(len(results), func(c comm.Communicator) error {
		var err error
		results[c.Rank()], err = RunRank(context.Background(), tallied{c, tl}, cfg, p, opts, func(e metrics.Epoch) error {
			epochs = append(epochs, e)
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return results, epochs, tl
}

// The servers count the bytes of every gradient pushed to them and of
// every reply carrying parameters, as the messages went through the
// communicator: a push is 9 bytes of header and 4 a value of the shard,
// a reply 25 and 4 a value. Worker 0's epochs report the servers' figures
// since the last report, the last epoch up to the servers' final counters,
// so that they add up to every byte of the run.
func TestServersCountTheirBytes(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Epochs = 4
	for _, tc := range []struct {
		name             string
		workers, servers int
		sync             bool
	}{{"async", 3, 1, false}, {"async", 3, 2, false}, {"ps-sync", 3, 2, true}, {"ps-sync", 2, 1, true}} {
		opts := Options{Workers: tc.workers, Servers: tc.servers, MaxStaleness: -1, Sync: tc.sync, Timeout: 30 * time.Second,
			NewStepper: stepperFactory(t, cfg, p, tc.workers)}
		results, epochs, tl := tallyRun(t, cfg, p, opts)
		n := int64(tc.workers)
		var values int64 // the model's
		var sizes []int
		for _, q := range results[0].Model.Params() {
			values += int64(len(q.Value.Data))
			sizes = append(sizes, len(q.Value.Data))
		}
		var epochSize int64 // every worker's batches
		for w := range tc.workers {
			epochSize += int64((shareLen(len(p.Train), w, tc.workers) + testBatch - 1) / testBatch)
		}

		// What the tally saw, server by server (each counters reply
		// answers a stats request): a worker pushes to a server until it
		// says stop, so every server had the run's gradients and at most
		// one push from each worker after them, and answered each worker's
		// first pull and every push with its parameters; and what the
		// server counted.
		var end Counters
		var pushes int64 // to every server
		for k, shard := range Plan(sizes, tc.servers) {
			rank := tc.workers + k
			var size int64 // the shard's values
			for _, i := range shard {
				size += int64(sizes[i])
			}
			pk, params := tl.requests[rank][kindPush], tl.replies[rank]-tl.requests[rank][kindStats]
			if params != n+pk || pk < int64(cfg.Epochs)*epochSize || pk > int64(cfg.Epochs)*epochSize+n {
				t.Fatalf("%s: %d pushes to server %d (an epoch is %d) and %d parameter replies", tc.name, pk, rank, epochSize, params)
			}
			if steps := (int64(cfg.Epochs)*epochSize + n - 1) / n; tc.sync && pk != n*steps {
				// Every worker pushes every step, and the step that
				// completes the epochs answers all with stop: nothing
				// comes later.
				t.Fatalf("ps-sync: %d pushes to server %d in %d steps of %d workers", pk, rank, steps, n)
			}
			cn := results[rank].Counters
			if cn.BytesGrad != pk*(9+4*size) || cn.BytesParams != params*(25+4*size) {
				t.Fatalf("%s, %d servers: server %d counted %d bytes of gradients and %d of parameters; %d pushes of %d values and %d replies sent",
					tc.name, tc.servers, rank, cn.BytesGrad, cn.BytesParams, pk, size, params)
			}
			end.add(cn)
			pushes += pk
		}

		// Worker 0's epochs.
		var grad, sent int64
		for _, e := range epochs {
			if e.BytesGrad <= 0 || e.BytesParams <= 0 {
				t.Fatalf("%s: epoch %d reports %d bytes of gradients and %d of parameters", tc.name, e.Epoch, e.BytesGrad, e.BytesParams)
			}
			grad += e.BytesGrad
			sent += e.BytesParams
		}
		if grad != results[0].Counters.BytesGrad || sent != results[0].Counters.BytesParams {
			t.Fatalf("%s: the epochs add up to %d and %d bytes, worker 0's last report %+v", tc.name, grad, sent, results[0].Counters)
		}
		if grad != end.BytesGrad || sent != end.BytesParams || grad != tl.pushBytes || sent != tl.paramBytes {
			t.Fatalf("%s, %d servers: the epochs report %d and %d bytes, the servers counted %d and %d, the ranks sent %d and %d",
				tc.name, tc.servers, grad, sent, end.BytesGrad, end.BytesParams, tl.pushBytes, tl.paramBytes)
		}
		t.Logf("%s, %d workers, %d servers, %d values: %d pushes to the servers, %d bytes of gradients, %d of parameters reported",
			tc.name, tc.workers, tc.servers, values, pushes, grad, sent)
	}
}

// A run that patience stops early reports every byte too: the pushes of
// the steps in flight when worker 0 stopped the run (its own next one
// among them), answered with stop, count in the last epoch, so the
// epochs' bytes are the bytes the ranks sent, asynchronous and
// synchronous.
func TestEpochsCountThePushesAfterAStop(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Patience, cfg.SelectByLoss = 200, 2, true
	for _, sync := range []bool{false, true} {
		opts := Options{Workers: 4, Servers: 2, MaxStaleness: -1, Sync: sync, Timeout: 30 * time.Second, NewStepper: stepperFactory(t, cfg, p, 4)}
		results, epochs, tl := tallyRun(t, cfg, p, opts)
		var grad, sent int64
		for _, e := range epochs {
			grad += e.BytesGrad
			sent += e.BytesParams
		}
		last := epochs[len(epochs)-1].Epoch
		if last >= cfg.Epochs || tl.lateBytes == 0 {
			t.Fatalf("sync %v: the last epoch reported is %d of %d, with %d bytes pushed after the stop: the test needs a run patience stops", sync, last, cfg.Epochs, tl.lateBytes)
		}
		if grad != tl.pushBytes || sent != tl.paramBytes || results[0].Counters.BytesGrad != grad || results[0].Counters.BytesParams != sent {
			t.Fatalf("sync %v: the epochs report %d bytes of gradients and %d of parameters, worker 0's counters %d and %d; the ranks sent %d (%d after the stop) and %d",
				sync, grad, sent, results[0].Counters.BytesGrad, results[0].Counters.BytesParams, tl.pushBytes, tl.lateBytes, tl.paramBytes)
		}
		t.Logf("sync %v: stopped after epoch %d; %d bytes of gradients (%d after the stop), %d of parameters", sync, last, grad, tl.lateBytes, sent)
	}
}
