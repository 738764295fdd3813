package job

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
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
	if err := shareResume(c, s.Resume, &opts, s.Log); err != nil {
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
		err = lostPeer(err, c, last)
	}
	return res, loop, err
}

// lostPeer names the rank whose loss ended the run, and the last epoch
// every worker completed.
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
	return fmt.Errorf("lost rank %d %s: %s", pe.Rank, done, msg)
}

// resumeHeader is what rank 0 broadcasts before the checkpoint: a status
// (0 ok, 1 the body is an error message) and the body's length.
const resumeHeaderLen = 9

// maxResumeBytes bounds the checkpoint a worker accepts from rank 0.
const maxResumeBytes = 1 << 36

// shareResume has rank 0 read the newest good checkpoint in dir and send it
// to the others, so that only rank 0 needs the checkpoint directory.
func shareResume(c comm.Communicator, dir string, opts *fullgraph.Options, logw io.Writer) error {
	if dir == "" {
		return nil
	}
	var body []byte
	hdr := make([]byte, resumeHeaderLen)
	if c.Rank() == 0 {
		st, path, err := checkpoint.LoadLatest(dir, func(w string) { fmt.Fprintf(logw, "graft train: %s\n", w) })
		if err != nil {
			hdr[0], body = 1, []byte(err.Error())
		} else {
			var b bytes.Buffer
			if err := checkpoint.Encode(&b, st); err != nil {
				hdr[0], body = 1, []byte(err.Error())
			} else {
				fmt.Fprintf(logw, "resuming from %s (after epoch %d)\n", path, st.Step)
				body, opts.Resume = b.Bytes(), st
			}
		}
		binary.LittleEndian.PutUint64(hdr[1:], uint64(len(body)))
	}
	if err := c.Broadcast("resume.header", 0, hdr); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	n := binary.LittleEndian.Uint64(hdr[1:])
	if n > maxResumeBytes || hdr[0] > 1 {
		return fmt.Errorf("--resume: rank 0 announced a %d-byte checkpoint with status %d", n, hdr[0])
	}
	if c.Rank() != 0 {
		body = make([]byte, n)
	}
	if n > 0 {
		if err := c.Broadcast("resume.state", 0, body); err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
	}
	if hdr[0] == 1 {
		return fmt.Errorf("--resume (on rank 0): %s", body)
	}
	if c.Rank() != 0 {
		st, err := checkpoint.Decode(body)
		if err != nil {
			return fmt.Errorf("--resume: the checkpoint from rank 0: %w", err)
		}
		opts.Resume = st
	}
	return nil
}
