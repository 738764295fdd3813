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
	// Epochs bounds the worker's own epochs over its seeds; 0 leaves it
	// to the servers, which say stop once the run's gradients are in
	// (ServerConfig.Epochs).
	Epochs int
	// Timeout is the longest the worker waits for a server's answer: a
	// dead or stalled server is then an error naming it.
	Timeout time.Duration
	// Slow, when above 1, makes every step take Slow times its compute
	// time, by sleeping after it: a slow machine, for experiments.
	Slow float64
	// OnStep, if set, is called after each step, with the model holding
	// the parameters just received.
	OnStep func(StepDone) error
}

// StepDone is one worker's step, as the servers answered it.
type StepDone struct {
	Epoch   int     // the worker's own epoch over its seeds, 1-based
	Loss    float64 // of the step's batch
	Seconds float64 // the step's wall time: compute, delay, push and pull
	// Pushes is the first server's count of gradients received from all
	// workers so far, EpochSize how many make an epoch (0 until every
	// worker has said); Stop is set once every server has all the run
	// needs.
	Pushes, EpochSize int64
	Stop              bool
}

// worker is one worker rank's state.
type worker struct {
	c        comm.Communicator
	cfg      WorkerConfig
	params   []*nn.Param
	versions []int // of each server's shard, as last received
	buf      []float32
	pushes   int64  // the first server's count, as last received
	epoch    int64  // the first server's epoch size, as last received
	said     []bool // which servers said stop: the worker pushes to them no more
	stop     bool   // every server said stop
	batches  int    // the stepper's, said in the first request
}

// Work trains s's model as one worker: it takes the parameters from the
// servers, then for every batch pushes its gradient to each server and
// takes back that server's parameters, until every server has said stop
// or cfg.Epochs epochs are done. Each server counts the gradients it keeps
// on its own, and a gradient fresh enough for one shard may be too stale
// for another, so one server may have the run's gradients while another
// still lacks some: the worker then pushes to the servers that have not
// said stop, and to those only. It tells every server when it is done,
// also after an error where it still can.
func Work(c comm.Communicator, s train.Stepper, cfg WorkerConfig) (err error) {
	if len(cfg.Plan) != len(cfg.Servers) {
		return fmt.Errorf("async: a plan of %d shards for %d servers", len(cfg.Plan), len(cfg.Servers))
	}
	w := &worker{c: c, cfg: cfg, params: s.Model().Params(), versions: make([]int, len(cfg.Servers)), said: make([]bool, len(cfg.Servers)), batches: s.Batches()}
	defer func() {
		for _, srv := range cfg.Servers {
			if e := c.Send(RequestSite, srv, request{kind: kindDone}.encode()); e != nil && err == nil {
				err = fmt.Errorf("async: worker rank %d: telling server rank %d it is done: %w", c.Rank(), srv, e)
			}
		}
	}()
	if err := w.round(kindPull); err != nil {
		return err
	}
	steps := 0
	for epoch := 1; !w.stop && (cfg.Epochs == 0 || epoch <= cfg.Epochs); epoch++ {
		for b := 0; b < s.Batches() && !w.stop; b++ {
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
			if err := w.round(kindPush); err != nil {
				return err
			}
			steps++
			if cfg.OnStep != nil {
				d := StepDone{Epoch: epoch, Loss: loss, Seconds: time.Since(t).Seconds(), Pushes: w.pushes, EpochSize: w.epoch, Stop: w.stop}
				if err := cfg.OnStep(d); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// round sends every server that has not said stop a request of kind (a
// push of the gradients it holds, or a pull), then takes each one's
// parameters.
func (w *worker) round(kind byte) error {
	for k, srv := range w.cfg.Servers {
		if w.said[k] {
			continue
		}
		req := request{kind: kind, version: w.versions[k]}
		if kind == kindPull {
			req.version = w.batches
		}
		if kind == kindPush {
			w.buf = w.buf[:0]
			for _, i := range w.cfg.Plan[k] {
				w.buf = append(w.buf, w.params[i].Grad.Data...)
			}
			req.grad = w.buf
		}
		if err := w.c.Send(RequestSite, srv, req.encode()); err != nil {
			return fmt.Errorf("async: worker rank %d: sending to server rank %d: %w", w.c.Rank(), srv, err)
		}
	}
	stop := true
	for k, srv := range w.cfg.Servers {
		if w.said[k] {
			continue
		}
		msg, err := w.await(srv)
		if err != nil {
			return err
		}
		r, err := decodeReply(msg, w.buf)
		if err != nil {
			return fmt.Errorf("async: worker rank %d: from server rank %d: %w", w.c.Rank(), srv, err)
		}
		w.buf = r.values
		off := 0
		for _, i := range w.cfg.Plan[k] {
			v := w.params[i].Value.Data
			if off+len(v) > len(r.values) {
				return fmt.Errorf("async: worker rank %d: server rank %d sent %d values for a shard of more", w.c.Rank(), srv, len(r.values))
			}
			off += copy(v, r.values[off:])
		}
		if off != len(r.values) {
			return fmt.Errorf("async: worker rank %d: server rank %d sent %d values for a shard of %d", w.c.Rank(), srv, len(r.values), off)
		}
		w.versions[k] = r.version
		w.said[k] = r.stop
		stop = stop && r.stop
		if k == 0 {
			w.pushes, w.epoch = r.pushes, r.epochSize
		}
	}
	w.stop = stop
	return nil
}

// await receives server srv's next answer within the timeout, which
// starts again at every reply that says wait (worker 0 evaluates while a
// synchronous server holds this worker's gradient).
func (w *worker) await(srv int) ([]byte, error) {
	for {
		msg, err := recvFrom(w.c, ReplySite, srv, time.Now().Add(w.cfg.Timeout), w.cfg.Timeout)
		if err != nil || len(msg) != replyHeader || msg[24] != replyWait {
			return msg, err
		}
	}
}

// recvFrom receives server srv's next message at site by deadline, timeout
// after the wait began (for the error).
func recvFrom(c comm.Communicator, site string, srv int, deadline time.Time, timeout time.Duration) ([]byte, error) {
	_, msg, err := c.Recv(site, srv, deadline)
	if errors.Is(err, comm.ErrDeadline) {
		return nil, fmt.Errorf("async: worker rank %d: server rank %d did not answer within %v (dead or stalled)", c.Rank(), srv, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("async: worker rank %d: waiting for server rank %d: %w", c.Rank(), srv, err)
	}
	return msg, nil
}

// Stats asks every server for its counters and returns their sum (each
// push goes to every server: Updates and Pushes count it once per server,
// BytesGrad and BytesParams each server's share of its bytes),
// with EpochSize the largest (0 only while no server knows it).
func Stats(c comm.Communicator, servers []int, timeout time.Duration) (Counters, error) {
	for _, srv := range servers {
		if err := c.Send(RequestSite, srv, request{kind: kindStats}.encode()); err != nil {
			return Counters{}, fmt.Errorf("async: rank %d: asking server rank %d for its counters: %w", c.Rank(), srv, err)
		}
	}
	return gather(c, servers, ReplySite, timeout)
}

// Final receives every server's counters as it sends them once every
// worker is done (ServerConfig.SendFinal), summed as Stats sums them: the
// run's figures, every push included.
func Final(c comm.Communicator, servers []int, timeout time.Duration) (Counters, error) {
	return gather(c, servers, FinalSite, timeout)
}

// gather receives every server's counters at site and sums them. The
// servers answer at once, so one deadline covers them all: a run with a
// stalled server ends after one timeout, not one per server.
func gather(c comm.Communicator, servers []int, site string, timeout time.Duration) (Counters, error) {
	var total Counters
	deadline := time.Now().Add(timeout)
	for _, srv := range servers {
		msg, err := recvFrom(c, site, srv, deadline, timeout)
		if err != nil {
			return Counters{}, err
		}
		cn, err := decodeCounters(msg)
		if err != nil {
			return Counters{}, fmt.Errorf("async: from server rank %d: %w", srv, err)
		}
		total.add(cn)
	}
	return total, nil
}
