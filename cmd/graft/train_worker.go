package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/launch"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// workerOptions make graft train one worker of a multi-process job: the
// launch flags (or a launcher's environment) give its rank, the world size
// and rank 0's address; --part-dir gives stored parts to train on.
type workerOptions struct {
	flags   *launch.Flags
	partDir string
	place   launch.Place
}

func (w *workerOptions) register(fs *flag.FlagSet) {
	w.flags = launch.AddFlags(fs)
	fs.StringVar(&w.partDir, "part-dir", "", "train on the parts 'graft partition --out DIR/' wrote; each worker reads only its own part")
}

// multi reports whether this is one worker of several processes.
func (w *workerOptions) multi() bool { return w.place.Size > 1 }

// leader reports whether this process reports and writes files (rank 0).
func (w *workerOptions) leader() bool { return w.place.Rank == 0 }

// resolve finds this process's place from the launch flags and launcher
// environment; in a job of several processes the world size is the number
// of parts.
func (w *workerOptions) resolve(fs *flag.FlagSet, d *distOptions) error {
	p, err := launch.Resolve(w.flags, os.Getenv)
	if err != nil {
		return usageError{err}
	}
	w.place = p
	if p.Size <= 1 {
		return nil
	}
	if flagSet(fs, "parts") && d.parts != p.Size {
		return usageError{fmt.Errorf("--parts %d contradicts the job's %d workers (from %s): each worker holds one part", d.parts, p.Size, p.Source)}
	}
	d.parts = p.Size
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// trainInput is what a run trains on: the whole problem with its layout,
// or (with --part-dir) the stored parts.
type trainInput struct {
	name, split string
	classes     int
	sparse      bool
	problem     train.Problem
	layout      *partition.Layout
	opts        fullgraph.Options
	manifest    *partstore.Manifest // with --part-dir
}

// load reads the dataset and splits it (every worker of a job computes the
// same partition from the same seeds), or reads the part directory's
// manifest.
func (o *trainOptions) load(fs *flag.FlagSet, storage nn.Storage, epochs int) (*trainInput, error) {
	if o.worker.partDir != "" {
		return o.loadPartDir(fs, epochs)
	}
	ds, err := dataset.Load(o.dataset, o.dataDir)
	if err != nil {
		return nil, err
	}
	if o.lcc {
		if ds, err = ds.LargestComponent(); err != nil {
			return nil, err
		}
	}
	split, err := ds.Split(o.split, o.seed)
	if err != nil {
		return nil, fmt.Errorf("%v; choose a split with training nodes in every class, e.g. --split random:20:30", err)
	}
	data, err := fullgraph.FromDataset(ds, split, storage, o.rowNormalize)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", ds.Name, err)
	}
	layout, opts, err := o.dist.prepare(ds.Graph, split.Train, epochs)
	if err != nil {
		return nil, err
	}
	return &trainInput{
		name: ds.Name, split: split.Name, classes: ds.NumClasses, sparse: data.Features.IsSparse(),
		problem: train.Problem{Graph: ds.Graph, Features: data.Features, Labels: data.Labels,
			Train: data.Train, Val: data.Val, Test: data.Test},
		layout: layout, opts: opts,
	}, nil
}

// dataFlags are fixed by a part directory, which holds the prepared data.
var dataFlags = []string{"dataset", "data-dir", "split", "lcc", "row-normalize", "features", "partition", "partition-seed"}

func (o *trainOptions) loadPartDir(fs *flag.FlagSet, epochs int) (*trainInput, error) {
	for _, name := range dataFlags {
		if flagSet(fs, name) {
			return nil, usageError{fmt.Errorf("--%s: the data and its partition come from --part-dir %s (see its manifest.json)", name, o.worker.partDir)}
		}
	}
	m, err := partstore.ReadManifest(o.worker.partDir)
	if err != nil {
		return nil, err
	}
	switch {
	case o.worker.multi() && m.Parts != o.dist.parts:
		return nil, usageError{fmt.Errorf("--part-dir %s holds %d parts but the job has %d workers", o.worker.partDir, m.Parts, o.dist.parts)}
	case !o.worker.multi() && flagSet(fs, "parts") && m.Parts != o.dist.parts:
		return nil, usageError{fmt.Errorf("--parts %d: --part-dir %s holds %d parts", o.dist.parts, o.worker.partDir, m.Parts)}
	}
	o.dist.parts, o.dist.partition = m.Parts, "part-dir:"+m.Method
	opts, err := o.dist.options(epochs)
	if err != nil {
		return nil, err
	}
	return &trainInput{name: m.Dataset, split: m.Split, classes: m.Classes, sparse: m.Sparse, opts: opts, manifest: m}, nil
}

// run trains in this process (goroutines for the parts) or, in a job of
// several processes, as this process's rank; onEpoch is called on the
// leader only.
func (o *trainOptions) run(ctx context.Context, cfg train.Config, in *trainInput, opts fullgraph.Options, stderr io.Writer, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if !o.worker.multi() {
		if in.manifest == nil {
			return fullgraph.RunInProcess(ctx, cfg, in.problem, in.layout, opts, onEpoch)
		}
		var res train.Result
		var tr *train.Loop
		err := comm.Run(in.manifest.Parts, func(c comm.Communicator) error {
			cb := onEpoch
			if c.Rank() != 0 {
				cb = nil
			}
			r, t, err := o.runRank(ctx, c, cfg, in, opts, cb)
			if c.Rank() == 0 {
				res, tr = r, t
			}
			return err
		})
		return res, tr, err
	}

	logger := log.New(stderr, "", log.LstdFlags)
	c, err := o.worker.flags.Connect(ctx, os.Getenv, logger.Printf)
	if err != nil {
		return train.Result{}, nil, err
	}
	defer c.Close()
	if err := shareResume(c, o.dist.resume, &opts, stderr); err != nil {
		return train.Result{}, nil, err
	}
	last := 0
	if opts.Resume != nil {
		last = opts.Resume.Step
	}
	res, tr, err := o.runRank(ctx, c, cfg, in, opts, func(m metrics.Epoch) error {
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
	return res, tr, err
}

// runRank trains rank c.Rank()'s part.
func (o *trainOptions) runRank(ctx context.Context, c comm.Communicator, cfg train.Config, in *trainInput, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if in.manifest == nil {
		return fullgraph.RunWorker(ctx, c, cfg, in.problem, in.layout, opts, onEpoch)
	}
	sp, err := partstore.ReadPart(o.worker.partDir, c.Rank())
	if err != nil {
		return train.Result{}, nil, err
	}
	return fullgraph.RunStoredWorker(ctx, c, cfg, sp, opts, onEpoch)
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
func shareResume(c comm.Communicator, dir string, opts *fullgraph.Options, stderr io.Writer) error {
	if dir == "" {
		return nil
	}
	var body []byte
	hdr := make([]byte, resumeHeaderLen)
	if c.Rank() == 0 {
		st, path, err := checkpoint.LoadLatest(dir, func(w string) { fmt.Fprintf(stderr, "graft train: %s\n", w) })
		if err != nil {
			hdr[0], body = 1, []byte(err.Error())
		} else {
			var b bytes.Buffer
			if err := checkpoint.Encode(&b, st); err != nil {
				hdr[0], body = 1, []byte(err.Error())
			} else {
				fmt.Fprintf(stderr, "resuming from %s (after epoch %d)\n", path, st.Step)
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

// isPartDirPath reports whether graft partition --out names a directory of
// parts rather than an assignment file.
func isPartDirPath(path string) bool {
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(os.PathSeparator)) {
		return true
	}
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// writePartDirs stores the parts of assignment parts for graft train
// --part-dir, with the data prepared as graft train prepares it by default
// (row-normalised features, stored dense or sparse by density) and the
// split spec drawn with seed.
func writePartDirs(dir, name, dataDir, splitSpec string, seed uint64, parts []int32, k int, method string) error {
	if strings.HasPrefix(name, "rmat:") {
		return usageError{errors.New("--out DIR/: stored parts need a dataset with labels; R-MAT graphs have none")}
	}
	ds, err := dataset.Load(name, dataDir)
	if err != nil {
		return err
	}
	split, err := ds.Split(splitSpec, seed)
	if err != nil {
		return fmt.Errorf("--out DIR/: %w", err)
	}
	data, err := fullgraph.FromDataset(ds, split, nn.Auto, true)
	if err != nil {
		return fmt.Errorf("dataset %s: %v", ds.Name, err)
	}
	layout, err := partition.BuildLayout(ds.Graph, parts, k)
	if err != nil {
		return err
	}
	src := partstore.Source{Graph: ds.Graph, Features: data.Features, Labels: data.Labels, Classes: ds.NumClasses, Split: split}
	m := partstore.Manifest{Dataset: ds.Name, Split: split.Name, Method: method}
	if err := partstore.Write(dir, m, src, layout); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	return writeFile(filepath.Join(dir, "assignment.txt"), func(w io.Writer) error { return partition.WriteAssignment(w, parts) })
}
