package async

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

// WorkerConfig is how a worker rank trains.
type WorkerConfig struct {
	// Servers are the server ranks; Plan[k] the indices (in the model's
	// Params) of the parameters Servers[k] holds (see Plan).
	Servers []int
	Plan    [][]int
	Epochs  int
	// Timeout is the longest the worker waits for a server's answer: a
	// dead or stalled server is then an error naming it.
	Timeout time.Duration
	// Slow, when above 1, makes every step take Slow times its compute
	// time, by sleeping after it: a slow machine, for experiments.
	Slow float64
	// OnEpoch, if set, is called after each of the worker's epochs, with
	// the model holding the parameters last received.
	OnEpoch func(EpochDone) error
}

// EpochDone is one worker's epoch.
type EpochDone struct {
	Epoch   int
	Loss    float64 // mean over the epoch's steps
	Steps   int     // the worker's steps so far
	Seconds float64 // wall time of the epoch's training
	Dropped int     // of this worker's gradients in the epoch, dropped as too stale (by any server)
}

// worker is one worker rank's state.
type worker struct {
	c        comm.Communicator
	cfg      WorkerConfig
	params   []*nn.Param
	versions []int // of each server's shard, as last received
	buf      []float32
}

// Work trains s's model as one worker: it takes the parameters from the
// servers, then for every batch of cfg.Epochs epochs pushes its gradient
// to each server and takes back that server's parameters. It tells the
// servers when it is done, also after an error where it still can.
func Work(c comm.Communicator, s train.Stepper, cfg WorkerConfig) (err error) {
	if len(cfg.Plan) != len(cfg.Servers) {
		return fmt.Errorf("async: a plan of %d shards for %d servers", len(cfg.Plan), len(cfg.Servers))
	}
	w := &worker{c: c, cfg: cfg, params: s.Model().Params(), versions: make([]int, len(cfg.Servers))}
	defer func() {
		for _, srv := range cfg.Servers {
			if e := c.Send(RequestSite, srv, request{kind: kindDone}.encode()); e != nil && err == nil {
				err = fmt.Errorf("async: worker rank %d: telling server rank %d it is done: %w", c.Rank(), srv, e)
			}
		}
	}()
	if _, err := w.round(kindPull); err != nil {
		return err
	}
	steps := 0
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		start := time.Now()
		var sum float64
		dropped := 0
		for b := range s.Batches() {
			t := time.Now()
			loss, err := s.Step(train.Batch{Epoch: epoch, Index: b, Step: steps, Micro: 0, Micros: 1})
			if err != nil {
				return err
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return fmt.Errorf("%w: %v at epoch %d", train.ErrNotFinite, loss, epoch)
			}
			if cfg.Slow > 1 {
				time.Sleep(time.Duration((cfg.Slow - 1) * float64(time.Since(t))))
			}
			n, err := w.round(kindPush)
			if err != nil {
				return err
			}
			dropped += n
			sum += loss
			steps++
		}
		if cfg.OnEpoch != nil {
			done := EpochDone{Epoch: epoch, Loss: sum / float64(max(s.Batches(), 1)), Steps: steps,
				Seconds: time.Since(start).Seconds(), Dropped: dropped}
			if err := cfg.OnEpoch(done); err != nil {
				return err
			}
		}
	}
	return nil
}

// round sends every server a request of kind (a push of the gradients it
// holds, or a pull), then takes each one's parameters. It returns how
// many servers dropped the gradient.
func (w *worker) round(kind byte) (dropped int, err error) {
	for k, srv := range w.cfg.Servers {
		req := request{kind: kind, version: w.versions[k]}
		if kind == kindPush {
			w.buf = w.buf[:0]
			for _, i := range w.cfg.Plan[k] {
				w.buf = append(w.buf, w.params[i].Grad.Data...)
			}
			req.grad = w.buf
		}
		if err := w.c.Send(RequestSite, srv, req.encode()); err != nil {
			return 0, fmt.Errorf("async: worker rank %d: sending to server rank %d: %w", w.c.Rank(), srv, err)
		}
	}
	for k, srv := range w.cfg.Servers {
		msg, err := w.await(srv)
		if err != nil {
			return 0, err
		}
		r, err := decodeReply(msg, w.buf)
		if err != nil {
			return 0, fmt.Errorf("async: worker rank %d: from server rank %d: %w", w.c.Rank(), srv, err)
		}
		w.buf = r.values
		off := 0
		for _, i := range w.cfg.Plan[k] {
			v := w.params[i].Value.Data
			if off+len(v) > len(r.values) {
				return 0, fmt.Errorf("async: worker rank %d: server rank %d sent %d values for a shard of more", w.c.Rank(), srv, len(r.values))
			}
			off += copy(v, r.values[off:])
		}
		if off != len(r.values) {
			return 0, fmt.Errorf("async: worker rank %d: server rank %d sent %d values for a shard of %d", w.c.Rank(), srv, len(r.values), off)
		}
		w.versions[k] = r.version
		if kind == kindPush && !r.applied {
			dropped++
		}
	}
	return dropped, nil
}

// await receives server srv's next answer within the timeout.
func (w *worker) await(srv int) ([]byte, error) {
	_, msg, err := w.c.Recv(ReplySite, srv, time.Now().Add(w.cfg.Timeout))
	if errors.Is(err, comm.ErrDeadline) {
		return nil, fmt.Errorf("async: worker rank %d: server rank %d did not answer within %v (dead or stalled)", w.c.Rank(), srv, w.cfg.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("async: worker rank %d: waiting for server rank %d: %w", w.c.Rank(), srv, err)
	}
	return msg, nil
}

// Stats asks every server for its counters and returns their sum, with
// Updates the mean over the shards (each push updates every shard).
func Stats(c comm.Communicator, servers []int, timeout time.Duration) (Counters, error) {
	var total Counters
	for _, srv := range servers {
		if err := c.Send(RequestSite, srv, request{kind: kindStats}.encode()); err != nil {
			return Counters{}, fmt.Errorf("async: rank %d: asking server rank %d for its counters: %w", c.Rank(), srv, err)
		}
	}
	w := &worker{c: c, cfg: WorkerConfig{Timeout: timeout}}
	for _, srv := range servers {
		msg, err := w.await(srv)
		if err != nil {
			return Counters{}, err
		}
		cn, err := decodeCounters(msg)
		if err != nil {
			return Counters{}, fmt.Errorf("async: from server rank %d: %w", srv, err)
		}
		total.Staleness.Merge(&cn.Staleness)
		total.Dropped += cn.Dropped
		total.Updates += cn.Updates
	}
	if len(servers) > 0 {
		total.Updates /= int64(len(servers))
	}
	return total, nil
}
