package async

import (
	"errors"
	"fmt"
	"maps"
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
	// one update, and only then answers them. Gradients it holds when
	// worker 0 stops the run (kindStop) are discarded: no step comes after
	// a stop.
	Sync bool
	// Epochs, when positive, is how many epochs of gradients the run
	// needs from all workers together, an epoch being every worker's
	// batches (each says how many in its first request): once they are
	// in, every answer says stop, and later gradients are ignored. Fast
	// workers thus do the share of the batches a slow one cannot.
	Epochs int
	// SendFinal makes the server send Workers[0], once every worker is
	// done, its counters at FinalSite (encodeCounters): the figures of
	// the pushes that came after worker 0's last request for them (Final).
	SendFinal bool
}

// Serve answers the workers' requests for shard sh until every worker is
// done. Requests are served in the order they arrive, from any worker. It
// returns the server's counters (the shard's and Serve's own), also after
// an error.
func Serve(c comm.Communicator, sh *Shard, cfg ServerConfig) (Counters, error) {
	s, err := serve(c, sh, cfg)
	return s.counters(), err
}

func serve(c comm.Communicator, sh *Shard, cfg ServerConfig) (*server, error) {
	s := &server{c: c, sh: sh, cfg: cfg, active: slices.Clone(cfg.Workers), pending: map[int][]float32{}, batches: map[int]int{}}
	for len(s.active) > 0 {
		from, msg, err := c.Recv(RequestSite, comm.AnyRank, time.Now().Add(cfg.Timeout))
		if errors.Is(err, comm.ErrDeadline) {
			return s, s.silent()
		}
		if err != nil {
			return s, fmt.Errorf("async: server rank %d: %w", c.Rank(), err)
		}
		if !slices.Contains(s.active, from) {
			return s, fmt.Errorf("async: server rank %d: a request from rank %d, which is not a working worker", c.Rank(), from)
		}
		req, err := decodeRequest(msg, s.grad)
		if err != nil {
			return s, fmt.Errorf("async: server rank %d: from rank %d: %w", c.Rank(), from, err)
		}
		if req.kind == kindPush {
			s.bytesGrad += int64(len(msg))
		}
		s.grad = req.grad
		if err := s.handle(from, req); err != nil {
			return s, err
		}
		switch {
		case !cfg.Sync || len(s.pending) == 0:
		case s.full():
			// Stopped (kindStop) with gradients held: no step comes after
			// a stop, so they are discarded, uncounted, and their workers
			// told to stop now rather than once the others are done.
			if err := s.discard(); err != nil {
				return s, err
			}
		case len(s.pending) == len(s.active):
			s.pushes += int64(len(s.pending))
			if err := syncStep(c, sh, s.pending, s.version, s.answer); err != nil {
				return s, err
			}
		}
	}
	if cfg.SendFinal && len(cfg.Workers) > 0 {
		if err := c.Send(FinalSite, cfg.Workers[0], encodeCounters(s.counters())); err != nil {
			return s, fmt.Errorf("async: server rank %d: sending rank %d the final counters: %w", c.Rank(), cfg.Workers[0], err)
		}
	}
	return s, nil
}

// server is Serve's state.
type server struct {
	c       comm.Communicator
	sh      *Shard
	cfg     ServerConfig
	active  []int // workers not done
	grad    []float32
	values  []float32
	pending map[int][]float32 // Sync: gradients waiting for the others'
	version int               // Sync: the version the pending gradients are of
	pushes  int64             // gradients kept: applied, or summed for an update (not those dropped, nor those discarded at a stop)
	batches map[int]int       // each worker's batches per epoch, from its first pull
	epoch   int64             // gradients in an epoch, once every worker has said
	stopped bool              // worker 0 stopped the run early (kindStop)
	// Payload bytes of the pushes received and of the parameters sent.
	bytesGrad, bytesParams int64
}

// counters are the shard's counters with the server's own.
func (s *server) counters() Counters {
	cn := s.sh.Counters()
	cn.Pushes, cn.EpochSize = s.pushes, s.epoch
	cn.BytesGrad, cn.BytesParams = s.bytesGrad, s.bytesParams
	return cn
}

// full reports whether the run has all the gradients it needs: its
// epochs', or any once worker 0 stopped it early.
func (s *server) full() bool {
	return s.stopped || s.cfg.Epochs > 0 && s.epoch > 0 && s.pushes >= int64(s.cfg.Epochs)*s.epoch
}

// answer sends worker `to` the shard's parameters.
func (s *server) answer(to int) error {
	s.values = s.sh.AppendValues(s.values[:0])
	r := reply{version: s.sh.Version(), pushes: s.pushes, epochSize: s.epoch, stop: s.full(), values: s.values}
	msg := r.encode()
	s.bytesParams += int64(len(msg))
	return s.c.Send(ReplySite, to, msg)
}

// start answers every working worker's first pull once every worker has
// said its batches.
func (s *server) start() error {
	if len(s.batches) < len(s.cfg.Workers) {
		return nil
	}
	for _, b := range s.batches {
		s.epoch += int64(b)
	}
	for _, w := range s.active {
		if err := s.answer(w); err != nil {
			return err
		}
	}
	return nil
}

// silent is the error of a server that waited in vain for any request.
func (s *server) silent() error {
	if len(s.batches) < len(s.cfg.Workers) {
		missing := slices.DeleteFunc(slices.Clone(s.cfg.Workers), func(w int) bool { _, ok := s.batches[w]; return ok })
		return fmt.Errorf("async: server rank %d: workers %v did not start within %v (dead or stalled)", s.c.Rank(), missing, s.cfg.Timeout)
	}
	return fmt.Errorf("async: server rank %d: no request within %v from workers %v (dead or stalled)", s.c.Rank(), s.cfg.Timeout, s.active)
}

// handle serves one request.
func (s *server) handle(from int, req request) error {
	var err error
	switch req.kind {
	case kindPull:
		// The first pull says the worker's batches, and its answer waits
		// for every worker's: all start from version 0 together, and no
		// gradient comes before the epoch's size is known.
		if _, ok := s.batches[from]; ok || len(s.batches) == len(s.cfg.Workers) {
			err = s.answer(from)
			break
		}
		s.batches[from] = max(req.version, 0)
		err = s.start()
	case kindStats:
		err = s.c.Send(ReplySite, from, encodeCounters(s.counters()))
	case kindDone:
		s.active = slices.DeleteFunc(s.active, func(r int) bool { return r == from })
		delete(s.pending, from)
		if _, ok := s.batches[from]; !ok && len(s.batches) < len(s.cfg.Workers) {
			// Done before it started (it failed): the others need not
			// wait for it.
			s.batches[from] = 0
			err = s.start()
		}
	case kindStop:
		s.stopped = true
	case kindAlive:
		return s.holdOn()
	case kindPush:
		if s.full() { // the run has its gradients: the worker is told to stop
			err = s.answer(from)
			break
		}
		if !s.cfg.Sync {
			_, kept, aerr := s.sh.Apply(req.grad, req.version)
			if aerr != nil {
				return fmt.Errorf("async: server rank %d: from rank %d: %w", s.c.Rank(), from, aerr)
			}
			if kept { // a gradient dropped for its staleness trained nothing: it counts toward no epoch
				s.pushes++
			}
			err = s.answer(from)
			break
		}
		if len(s.pending) == 0 {
			s.version = req.version
		}
		if req.version != s.version || s.pending[from] != nil {
			return fmt.Errorf("async: server rank %d: synchronous, but rank %d pushed a gradient of version %d while the step is at %d", s.c.Rank(), from, req.version, s.version)
		}
		s.pending[from] = slices.Clone(req.grad)
	}
	if err != nil {
		return fmt.Errorf("async: server rank %d: answering rank %d: %w", s.c.Rank(), from, err)
	}
	return nil
}

// holdOn answers worker 0's word that it evaluates (kindAlive): the wait
// for a request starts again with it, and the workers whose gradients a
// synchronous step holds are told to wait on, rather than give the server
// up as stalled.
func (s *server) holdOn() error {
	for _, r := range slices.Sorted(maps.Keys(s.pending)) {
		if err := s.c.Send(ReplySite, r, reply{wait: true}.encode()); err != nil {
			return fmt.Errorf("async: server rank %d: telling rank %d to wait: %w", s.c.Rank(), r, err)
		}
	}
	return nil
}

// discard drops the pending gradients without applying or counting them
// and answers their workers, in rank order, with the parameters as they
// are (and stop).
func (s *server) discard() error {
	ranks := slices.Sorted(maps.Keys(s.pending))
	for _, r := range ranks {
		delete(s.pending, r)
		if err := s.answer(r); err != nil {
			return fmt.Errorf("async: server rank %d: answering rank %d: %w", s.c.Rank(), r, err)
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
