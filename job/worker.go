package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"maps"
	"os"
	"slices"
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
	if err := s.agreeSettings(c); err != nil {
		// A peer that failed while the settings were compared (its part
		// unreadable, say) is named with its reason, as later on.
		return train.Result{}, nil, lostPeer(err, c, 0)
	}
	if err := s.shareResume(c, &opts); err != nil {
		return train.Result{}, nil, err
	}
	last := 0
	if opts.Resume != nil {
		last = opts.Resume.Step
	}
	s.roundFeatures(in)
	res, loop, err := s.runRank(ctx, c, in, opts, func(m metrics.Epoch) error {
		last = m.Epoch
		if onEpoch != nil {
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

// agreeSettings checks that every worker was started with the settings
// rank 0 was (the record a checkpoint keeps, trajectory): a worker with
// another learning rate or seed would otherwise train its own model into
// the shared one. Every worker receives every other's record, so all of
// them refuse alike, naming the first rank that differs and how. Settings
// that name files (the dataset, labels, features, split, part directory,
// an assignment file) may differ between machines; the data's fingerprint
// and the partition's layout stand for them.
func (s *Spec) agreeSettings(c comm.Communicator) error {
	mine, err := json.Marshal(comparableAcrossWorkers(s.record))
	if err != nil {
		return err
	}
	send, recv := make([][]byte, c.Size()), make([][]byte, c.Size())
	for p := range send {
		send[p] = mine
	}
	if err := c.AllToAll("job.settings", send, recv); err != nil {
		return fmt.Errorf("comparing the workers' settings: %w", err)
	}
	var root map[string]string
	if err := json.Unmarshal(recv[0], &root); err != nil {
		return fmt.Errorf("rank 0's settings: %w", err)
	}
	for p := 1; p < len(recv); p++ {
		var theirs map[string]string
		if err := json.Unmarshal(recv[p], &theirs); err != nil {
			return fmt.Errorf("rank %d's settings: %w", p, err)
		}
		var ce *checkpoint.ConfigError
		if errors.As((&checkpoint.State{Config: root}).CheckConfig(theirs), &ce) {
			diffs := make([]string, len(ce.Diffs))
			for i, d := range ce.Diffs {
				name := "--" + d.Name
				if d.Name == "data" || slices.Contains(recipeSettings, d.Name) {
					name = d.Name
				}
				diffs[i] = fmt.Sprintf("%s %s (rank 0: %s)", name, orUnset(d.Now), orUnset(d.Was))
			}
			return specError(fmt.Errorf("rank %d was started with other settings than rank 0: %s; start every worker with the same flags", p, strings.Join(diffs, ", ")))
		}
	}
	return nil
}

// comparableAcrossWorkers is record without the settings that name files,
// the partition reduced to its layout.
func comparableAcrossWorkers(record map[string]string) map[string]string {
	r := maps.Clone(record)
	for _, k := range []string{"dataset", "labels", "features", "split", "part-dir"} {
		delete(r, k)
	}
	if p, ok := r["partition"]; ok {
		if i := strings.Index(p, " (layout "); i >= 0 {
			r["partition"] = p[i+2 : len(p)-1]
		}
	}
	return r
}

func orUnset(v string) string {
	if v == "" {
		return "unset"
	}
	return v
}
