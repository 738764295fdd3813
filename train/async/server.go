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
	// Epochs, when positive, is how many epochs of gradients the run
	// needs from all workers together, an epoch being every worker's
	// batches (each says how many in its first request): once they are
	// in, every answer says stop, and later gradients are ignored. Fast
	// workers thus do the share of the batches a slow one cannot.
	Epochs int
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
		pushes  int64           // gradients received and used
		batches = map[int]int{} // each worker's batches per epoch, from its pull
		epoch   int64           // gradients in an epoch, once every worker has said
	)
	full := func() bool { return cfg.Epochs > 0 && epoch > 0 && pushes >= int64(cfg.Epochs)*epoch }
	answer := func(to int) error {
		values = sh.AppendValues(values[:0])
		r := reply{version: sh.Version(), pushes: pushes, epochSize: epoch, stop: full(), values: values}
		return c.Send(ReplySite, to, r.encode())
	}
	// start answers every working worker's first pull once every worker
	// has said its batches.
	start := func() error {
		if len(batches) < len(cfg.Workers) {
			return nil
		}
		for _, b := range batches {
			epoch += int64(b)
		}
		for _, w := range active {
			if err := answer(w); err != nil {
				return err
			}
		}
		return nil
	}
	for len(active) > 0 {
		from, msg, err := c.Recv(RequestSite, comm.AnyRank, time.Now().Add(cfg.Timeout))
		if errors.Is(err, comm.ErrDeadline) {
			if len(batches) < len(cfg.Workers) {
				missing := slices.DeleteFunc(slices.Clone(cfg.Workers), func(w int) bool { _, ok := batches[w]; return ok })
				return fmt.Errorf("async: server rank %d: workers %v did not start within %v (dead or stalled)", c.Rank(), missing, cfg.Timeout)
			}
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
			// The first pull says the worker's batches, and its answer
			// waits for every worker's: all start from version 0 together,
			// and no gradient comes before the epoch's size is known.
			if _, ok := batches[from]; ok || len(batches) == len(cfg.Workers) {
				err = answer(from)
				break
			}
			batches[from] = max(req.version, 0)
			err = start()
		case kindStats:
			cn := sh.Counters()
			cn.Pushes, cn.EpochSize = pushes, epoch
			err = c.Send(ReplySite, from, encodeCounters(cn))
		case kindDone:
			active = slices.DeleteFunc(active, func(r int) bool { return r == from })
			delete(pending, from)
			if _, ok := batches[from]; !ok && len(batches) < len(cfg.Workers) {
				// Done before it started (it failed): the others need not
				// wait for it.
				batches[from] = 0
				err = start()
			}
		case kindPush:
			if full() { // the run has its gradients: the worker is told to stop
				err = answer(from)
				break
			}
			if !cfg.Sync {
				if _, _, aerr := sh.Apply(req.grad, req.version); aerr != nil {
					return fmt.Errorf("async: server rank %d: from rank %d: %w", c.Rank(), from, aerr)
				}
				pushes++
				err = answer(from)
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
			pushes += int64(len(pending))
			if err := syncStep(c, sh, pending, version, answer); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncStep applies the mean of the pending gradients, summed in rank
// order, and answers their workers.
func syncStep(c comm.Communicator, sh *Shard, pending map[int][]float32, version int, answer func(int) error) error {
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
	if _, _, err := sh.Apply(mean, version); err != nil {
		return fmt.Errorf("async: server rank %d: %w", c.Rank(), err)
	}
	for _, r := range ranks {
		if err := answer(r); err != nil {
			return fmt.Errorf("async: server rank %d: answering rank %d: %w", c.Rank(), r, err)
		}
		delete(pending, r)
	}
	return nil
}
