package job

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// runWorker trains this process's part as one worker of a multi-process
// job: it connects to the others, takes the checkpoint to resume from rank
// 0, and names the rank whose loss ends the job.
func (s *Spec) runWorker(ctx context.Context, in *input, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if s.Launch == nil {
		return train.Result{}, nil, specError(errors.New("a worker of a multi-process job needs its launch settings"))
	}
	logger := log.New(s.Log, "", log.LstdFlags)
	c, err := s.Launch.Connect(ctx, os.Getenv, logger.Printf)
	if err != nil {
		return train.Result{}, nil, err
	}
	defer c.Close()
	if err := s.shareResume(c, &opts); err != nil {
		return train.Result{}, nil, err
	}
	last := 0
	if opts.Resume != nil {
		last = opts.Resume.Step
	}
	res, loop, err := s.runRank(ctx, c, in, opts, func(m metrics.Epoch) error {
		last = m.Epoch
		if c.Rank() == 0 && onEpoch != nil {
			return onEpoch(m)
		}
		return nil
	})
	if err == nil || errors.Is(err, train.ErrInterrupted) {
		// Every worker has left its last collective before any closes.
		if berr := c.Barrier("train.done"); berr != nil && err == nil {
			err = berr
		}
	}
	if err != nil && !errors.Is(err, train.ErrInterrupted) {
		// Tell the others why before closing; after a peer's failure this
		// does nothing.
		c.Abort(err)
		err = lostPeer(err, c, last)
	}
	return res, loop, err
}

// lostPeer names the rank whose loss or failure ended the run, and the last
// epoch every worker completed.
func lostPeer(err error, c *comm.TCP, last int) error {
	var pe *comm.PeerError
	if !errors.As(err, &pe) && !errors.As(c.Err(), &pe) {
		return err
	}
	if pe.Rank == c.Rank() {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, pe.Error()) {
		msg = pe.Error() + " (" + msg + ")"
	}
	done := fmt.Sprintf("after epoch %d, the last one completed", last)
	if last == 0 {
		done = "before any epoch completed"
	}
	if errors.Is(pe, comm.ErrPeerAborted) {
		return fmt.Errorf("rank %d failed %s: %s", pe.Rank, done, msg)
	}
	return fmt.Errorf("lost rank %d %s: %s", pe.Rank, done, msg)
}
