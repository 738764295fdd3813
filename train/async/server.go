package async

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/graft-gnn/graft/comm"
)

// ServerConfig is how a server rank serves its shard.
type ServerConfig struct {
	// Workers are the ranks that send requests; the server returns once
	// each has said it is done.
	Workers []int
	// Timeout is the longest the server waits for any request while some
	// worker is not done: a dead or stalled worker is then an error naming
	// the workers it was waiting for.
	Timeout time.Duration
	// Sync makes the server synchronous, the baseline: it waits for a
	// gradient from every worker that is not done, applies their mean as
	// one update, and only then answers them.
	Sync bool
}

// Serve answers the workers' requests for shard sh until every worker is
// done. Requests are served in the order they arrive, from any worker.
func Serve(c comm.Communicator, sh *Shard, cfg ServerConfig) error {
	active := slices.Clone(cfg.Workers)
	var (
		grad    []float32
		values  []float32
		pending = map[int][]float32{} // Sync: gradients waiting for the others'
		version int
	)
	answer := func(to int, r reply) error {
		values = sh.AppendValues(values[:0])
		r.version, r.values = sh.Version(), values
		return c.Send(ReplySite, to, r.encode())
	}
	for len(active) > 0 {
		from, msg, err := c.Recv(RequestSite, comm.AnyRank, time.Now().Add(cfg.Timeout))
		if errors.Is(err, comm.ErrDeadline) {
			return fmt.Errorf("async: server rank %d: no request within %v from workers %v (dead or stalled)", c.Rank(), cfg.Timeout, active)
		}
		if err != nil {
			return fmt.Errorf("async: server rank %d: %w", c.Rank(), err)
		}
		if !slices.Contains(active, from) {
			return fmt.Errorf("async: server rank %d: a request from rank %d, which is not a working worker", c.Rank(), from)
		}
		req, err := decodeRequest(msg, grad)
		if err != nil {
			return fmt.Errorf("async: server rank %d: from rank %d: %w", c.Rank(), from, err)
		}
		grad = req.grad
		switch req.kind {
		case kindPull:
			err = answer(from, reply{})
		case kindStats:
			err = c.Send(ReplySite, from, encodeCounters(sh.Counters()))
		case kindDone:
			active = slices.DeleteFunc(active, func(r int) bool { return r == from })
			delete(pending, from)
		case kindPush:
			if !cfg.Sync {
				tau, applied, aerr := sh.Apply(req.grad, req.version)
				if aerr != nil {
					return fmt.Errorf("async: server rank %d: from rank %d: %w", c.Rank(), from, aerr)
				}
				err = answer(from, reply{tau: tau, applied: applied})
				break
			}
			if len(pending) == 0 {
				version = req.version
			}
			if req.version != version || pending[from] != nil {
				return fmt.Errorf("async: server rank %d: synchronous, but rank %d pushed a gradient of version %d while the step is at %d", c.Rank(), from, req.version, version)
			}
			pending[from] = slices.Clone(req.grad)
		}
		if err != nil {
			return fmt.Errorf("async: server rank %d: answering rank %d: %w", c.Rank(), from, err)
		}
		if cfg.Sync && len(pending) > 0 && len(pending) == len(active) {
			if err := syncStep(c, sh, pending, version, answer); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncStep applies the mean of the pending gradients, summed in rank
// order, and answers their workers.
func syncStep(c comm.Communicator, sh *Shard, pending map[int][]float32, version int, answer func(int, reply) error) error {
	ranks := make([]int, 0, len(pending))
	for r := range pending {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	mean := make([]float32, sh.Size())
	for _, r := range ranks {
		for i, g := range pending[r] {
			mean[i] += g
		}
	}
	inv := 1 / float32(len(ranks))
	for i := range mean {
		mean[i] *= inv
	}
	tau, applied, err := sh.Apply(mean, version)
	if err != nil {
		return fmt.Errorf("async: server rank %d: %w", c.Rank(), err)
	}
	for _, r := range ranks {
		if err := answer(r, reply{tau: tau, applied: applied}); err != nil {
			return fmt.Errorf("async: server rank %d: answering rank %d: %w", c.Rank(), r, err)
		}
		delete(pending, r)
	}
	return nil
}
