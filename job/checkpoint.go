package job

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// checkpoints sets up saving and resuming. In a multi-process job the
// directories are not touched here: rank 0 opens them once the workers are
// connected and tells the others (shareResume).
func (s *Spec) checkpoints(opts *fullgraph.Options, in *input, schedule string, multi bool) error {
	if s.Resume != "" && s.CheckpointDir == "" {
		s.CheckpointDir = s.Resume
	}
	for _, name := range s.ResumeAllow {
		if !slices.Contains(Resumable, name) {
			return specError(fmt.Errorf("--resume-allow %s: only %s may change when resuming", name, strings.Join(Resumable, ", ")))
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
		fmt.Fprintf(s.Log, "resuming run %s (settings %s) from %s (after epoch %d)\n", cmp.Or(st.Run, "(unnamed)"), checkpoint.ConfigHash(s.record), path, st.Step)
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
			return s.foreign(fe)
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

// foreign words the refusal of a checkpoint directory holding another
// run's checkpoints, saying whether that run had this one's settings (and
// so can be continued as it is) or which differ.
func (s *Spec) foreign(fe *checkpoint.ForeignError) error {
	msg := fmt.Sprintf("%v: continue that run with --resume %s, or give this run an empty --checkpoint-dir", fe, fe.Dir)
	if fe.Config == nil || fe.Config[recordVersionKey] == "" {
		return errors.New(msg)
	}
	var ce *checkpoint.ConfigError
	if err := (&checkpoint.State{Config: canonicalSpecs(fe.Config)}).CheckConfig(s.record); !errors.As(err, &ce) {
		return fmt.Errorf("%s (that run has this one's settings)", msg)
	}
	return fmt.Errorf("%s (that run was trained with %s)", msg, flagDiffs(ce))
}

// checkResume refuses a checkpoint whose run was trained with other
// settings than this one, naming the flags that differ.
func (s *Spec) checkResume(st *checkpoint.State) error {
	if st.Config == nil {
		fmt.Fprintf(s.Log, "graft train: the checkpoint records no settings to compare with this run's (an older graft wrote it)\n")
	}
	was, want := canonicalSpecs(withAdded(st.Config)), s.record
	if was != nil && was[recordVersionKey] == "" {
		var unknown []string
		was, want, unknown = fromFirstRecord(was, want)
		fmt.Fprintf(s.Log, "graft train: the checkpoint, of an older graft, does not record %s; they are not compared\n", strings.Join(unknown, ", "))
	}
	allowed := s.ResumeAllow
	if slices.Contains(allowed, "parts") {
		allowed = append(slices.Clone(allowed), resizing...)
		if err := s.checkResize(st, was, want); err != nil {
			return err
		}
		was, want = unusedAsDefault(was), unusedAsDefault(want)
	}
	err := (&checkpoint.State{Config: was}).CheckConfig(want, allowed...)
	var ce *checkpoint.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	var allow []string
	for _, d := range ce.Diffs {
		if slices.Contains(Resumable, d.Name) {
			allow = append(allow, d.Name)
		}
	}
	msg := fmt.Sprintf("--resume %s: the checkpointed run was trained with %s; resume with its settings", s.Resume, flagDiffs(ce))
	switch fixed := len(ce.Diffs) - len(allow); {
	case fixed == 0:
		msg += fmt.Sprintf(" (--resume-allow %s lets them change)", strings.Join(allow, ","))
	case len(allow) > 0:
		msg += fmt.Sprintf(" (--resume-allow %s lets %s change; the others cannot change within a run: to train with them, start afresh, without --resume)", strings.Join(allow, ","), strings.Join(allow, " and "))
	default:
		msg += ", or start afresh, without --resume, to train with these (they cannot change within a run)"
	}
	return errors.New(msg)
}

// added are the settings recorded since the record of every setting
// (recordVersion) began, with the value every run had before, given the
// rest of its record: a checkpoint that lacks one was trained with that
// value.
var added = map[string]func(record map[string]string) string{
	"rebalance": func(map[string]string) string { return "off" },
	"eval-compress": func(r map[string]string) string {
		if n, err := strconv.Atoi(r["parts"]); err == nil && n > 1 {
			return "none"
		}
		return "unused" // one worker: no exchange to compress
	},
}

// withAdded returns record with the settings of added it lacks.
func withAdded(record map[string]string) map[string]string {
	if record == nil {
		return nil
	}
	r := record
	for k, was := range added {
		if _, ok := r[k]; !ok {
			r = maps.Clone(r)
			r[k] = was(record)
		}
	}
	return r
}

// checkResize refuses to resume on another number of workers a run that
// keeps state per pair of workers (a delta codec's reconstructions), and
// reshares the gradient compression's state among the new workers
// (train.ReshareState).
func (s *Spec) checkResize(st *checkpoint.State, was, want map[string]string) error {
	if was == nil || was["parts"] == want["parts"] {
		return nil
	}
	if v := was["compress"]; compress.KeepsState(v) {
		return specError(fmt.Errorf("--resume-allow parts: the checkpointed run (--parts %s) keeps --compress %s state per pair of workers, which does not carry over to --parts %s; resume with --parts %s", was["parts"], v, want["parts"], was["parts"]))
	}
	from, err1 := strconv.Atoi(was["parts"])
	to, err2 := strconv.Atoi(want["parts"])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("--resume-allow parts: from --parts %q to %q", was["parts"], want["parts"])
	}
	return train.ReshareState(st, from, to)
}

// unusedAsDefault returns record with the communication settings a run of
// one worker does not use set to their defaults, which is what they are
// when a resize brings them into use.
func unusedAsDefault(record map[string]string) map[string]string {
	r := maps.Clone(record)
	for name, def := range map[string]string{"compress": "none", "compress-last": "false", "grad-compress": "none", "eval-compress": "none", "schedule": "fixed:1"} {
		if r[name] == "unused" {
			r[name] = def
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
		// The others save with rank 0 (a streaming codec's and the
		// gradient compression's state are gathered then), and drop
		// what they save.
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

// flagDiffs words the settings ce lists, as the flags that set them.
func flagDiffs(ce *checkpoint.ConfigError) string {
	diffs := make([]string, len(ce.Diffs))
	for i, d := range ce.Diffs {
		switch {
		case slices.Contains(recipeSettings, d.Name):
			diffs[i] = d.String() + " (the recipe's)"
		case d.Name == "data":
			diffs[i] = "other data: " + d.String()
		default:
			diffs[i] = "--" + d.String()
		}
	}
	return strings.Join(diffs, ", ")
}

// dropCheckpoint is the saving of workers other than rank 0.
func dropCheckpoint(*checkpoint.State) error { return nil }
