package job

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// Resumable names the settings a resume may change when Spec.ResumeAllow
// lists them: they decide when the run stops, not the path it takes.
var Resumable = []string{"epochs", "patience"}

// checkpoints sets up saving and resuming. In a multi-process job the
// directories are not touched here: rank 0 opens them once the workers are
// connected and tells the others (shareResume).
func (s *Spec) checkpoints(opts *fullgraph.Options, in *input, schedule string, multi bool) error {
	if s.Resume != "" && s.CheckpointDir == "" {
		s.CheckpointDir = s.Resume
	}
	for _, name := range s.ResumeAllow {
		if !slices.Contains(Resumable, name) {
			return specError(fmt.Errorf("--resume-allow %s: only %s may change when resuming", name, strings.Join(Resumable, " and ")))
		}
	}
	s.record = s.trajectory(in, schedule)
	if multi {
		return nil
	}
	return s.openCheckpoints(opts)
}

// openCheckpoints reads the checkpoint to resume from, if any, and checks it
// against this run; claims the checkpoint directory for the run (removing
// leftovers of interrupted saves, refusing another run's checkpoints); and
// sets up saving, every checkpoint marked with the run and its settings.
func (s *Spec) openCheckpoints(opts *fullgraph.Options) error {
	var run string
	switch {
	case s.Resume != "":
		st, path, err := checkpoint.LoadLatest(s.Resume, func(w string) { fmt.Fprintf(s.Log, "graft train: %s\n", w) })
		if err != nil {
			return fmt.Errorf("--resume: %v", err)
		}
		if err := s.checkResume(st); err != nil {
			return err
		}
		fmt.Fprintf(s.Log, "resuming from %s (after epoch %d)\n", path, st.Step)
		opts.Resume, run = st, st.Run
	case s.CheckpointDir != "":
		run = checkpoint.NewRun()
	}
	dir := s.CheckpointDir
	if dir == "" {
		return nil
	}
	if err := checkpoint.Claim(dir, run); err != nil {
		if fe := (*checkpoint.ForeignError)(nil); errors.As(err, &fe) {
			return fmt.Errorf("%v: continue that run with --resume %s, or give this run an empty --checkpoint-dir", err, dir)
		}
		return err
	}
	record := s.record
	opts.CheckpointEvery = s.CheckpointEvery
	opts.SaveCheckpoint = func(st *checkpoint.State) error {
		st.Run, st.Config = run, record
		_, err := checkpoint.Save(dir, st, 3)
		return err
	}
	return nil
}

// checkResume refuses a checkpoint whose run was trained with other
// settings than this one, naming the flags that differ.
func (s *Spec) checkResume(st *checkpoint.State) error {
	if st.Config == nil {
		fmt.Fprintf(s.Log, "graft train: the checkpoint records no settings to compare with this run's (an older graft wrote it)\n")
	}
	err := st.CheckConfig(s.record, s.ResumeAllow...)
	var ce *checkpoint.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	diffs := make([]string, len(ce.Diffs))
	var allow []string
	for i, d := range ce.Diffs {
		diffs[i] = "--" + d.String()
		if slices.Contains(Resumable, d.Name) {
			allow = append(allow, d.Name)
		}
	}
	msg := fmt.Sprintf("--resume %s: the checkpointed run was trained with %s; resume with its settings", s.Resume, strings.Join(diffs, ", "))
	if len(allow) > 0 {
		msg += fmt.Sprintf(" (--resume-allow %s lets them change)", strings.Join(allow, ","))
	}
	return errors.New(msg)
}

// trajectory records, by flag name, every setting that determines the
// path a run takes: a resume must repeat them (those in Resumable may
// change with ResumeAllow). Settings with no effect on the trajectory (the
// emulated link, outputs, checkpointing) are left out, as are the
// communication settings of a run of one part.
func (s *Spec) trajectory(in *input, schedule string) map[string]string {
	c := &s.Train
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	selectBy := "acc"
	if c.SelectByLoss {
		selectBy = "loss"
	}
	features := "dense"
	if in.sparse {
		features = "sparse"
	}
	r := map[string]string{
		"dataset": in.name, "split": in.split, "features": features,
		"model": c.Model.Model, "layers": strconv.Itoa(c.Model.Layers), "hidden": strconv.Itoa(c.Model.Hidden),
		"heads": strconv.Itoa(c.Model.Heads), "dropout": f(c.Model.Dropout), "normalize": strconv.FormatBool(c.Model.Normalize),
		"seed": strconv.FormatUint(c.Model.Seed, 10), "optimizer": string(c.Optimizer.Algorithm), "lr": f(c.Optimizer.LR),
		"weight-decay": f(c.WeightDecay), "select": selectBy, "patience": strconv.Itoa(c.Patience),
		"epochs": strconv.Itoa(c.Epochs), "eval-every": strconv.Itoa(max(c.EvalEvery, 1)),
		"accumulate": strconv.Itoa(max(c.Accumulate, 1)), "parts": strconv.Itoa(s.Parts),
	}
	if m := s.Train.Metric; m != "" && m != train.Accuracy {
		r["metric"] = string(m)
	}
	if s.Files.Labels != "" {
		r["labels"] = s.Files.Labels
	}
	if s.Files.Features != "" { // --features names the file; its storage follows from it
		r["features"] = s.Files.Features + " (" + features + ")"
	}
	if in.manifest != nil {
		r["part-dir"] = "layout " + in.manifest.Layout
	} else {
		r["lcc"], r["row-normalize"] = strconv.FormatBool(s.LCC), strconv.FormatBool(s.RowNormalize)
	}
	if s.Parts > 1 {
		if in.layout != nil {
			r["partition"] = fmt.Sprintf("%s (layout %016x)", s.Partition, partstore.Fingerprint(in.layout))
			r["partition-seed"] = strconv.FormatUint(s.PartitionSeed, 10)
		}
		r["compress"] = s.Codec
		if r["compress"] == "" {
			r["compress"] = "none"
		}
		if strings.HasPrefix(schedule, "linear:") || strings.HasPrefix(schedule, "exp:") {
			schedule += fmt.Sprintf(" over %d epochs", c.Epochs) // the ratios depend on the epoch count
		}
		r["schedule"] = schedule
		if s.CompressLast {
			r["compress-last"] = "true"
		}
	}
	if s.Sampler != "" {
		r["sampler"], r["batch-size"] = s.Sampler, strconv.Itoa(s.BatchSize)
		if s.EvalSampler != "" {
			r["eval-sampler"] = s.EvalSampler
		}
	}
	return r
}

// resumeHeader is what rank 0 broadcasts before the checkpoint: a status
// (0 ok, 1 the body is an error message) and the body's length.
const resumeHeaderLen = 9

// maxResumeBytes bounds the checkpoint a worker accepts from rank 0.
const maxResumeBytes = 1 << 36

// shareResume has rank 0 open the checkpoint directories and send the
// others the checkpoint to resume from (none for a fresh run), or why it
// refused them, so that only rank 0 needs the directories.
func (s *Spec) shareResume(c comm.Communicator, opts *fullgraph.Options) error {
	if s.Resume == "" && s.CheckpointDir == "" {
		return nil
	}
	var body []byte
	hdr := make([]byte, resumeHeaderLen)
	if c.Rank() == 0 {
		if err := s.openCheckpoints(opts); err != nil {
			hdr[0], body = 1, []byte(err.Error())
		} else if opts.Resume != nil {
			var b bytes.Buffer
			if err := checkpoint.Encode(&b, opts.Resume); err != nil {
				hdr[0], body = 1, []byte(err.Error())
			} else {
				body = b.Bytes()
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
	if c.Rank() != 0 {
		// The others save with rank 0 (a streaming codec's state is
		// gathered then), and drop what they save.
		opts.CheckpointEvery, opts.SaveCheckpoint = s.CheckpointEvery, dropCheckpoint
	}
	switch {
	case hdr[0] == 1 && c.Rank() == 0:
		return errors.New(string(body))
	case hdr[0] == 1:
		return fmt.Errorf("rank 0: %s", body)
	case c.Rank() != 0 && n > 0:
		st, err := checkpoint.Decode(body)
		if err != nil {
			return fmt.Errorf("--resume: the checkpoint from rank 0: %w", err)
		}
		opts.Resume = st
	}
	return nil
}

// dropCheckpoint is the saving of workers other than rank 0.
func dropCheckpoint(*checkpoint.State) error { return nil }
