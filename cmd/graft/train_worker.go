package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/graft-gnn/graft/launch"
)

// workerOptions make graft train one worker of a multi-process job: the
// launch flags (or a launcher's environment) give its rank, the world size
// and rank 0's address; --part-dir gives stored parts to train on.
type workerOptions struct {
	flags   *launch.Flags
	partDir string
}

func (w *workerOptions) register(fs *flag.FlagSet) {
	w.flags = launch.AddFlags(fs)
	fs.StringVar(&w.partDir, "part-dir", "", "train on the parts 'graft partition --out DIR/' wrote; each worker reads only its own part")
}

// resolve finds this process's place from the launch flags and launcher
// environment; in a job of several processes the world size is the number
// of parts.
func (w *workerOptions) resolve(fs *flag.FlagSet, d *distOptions) (launch.Place, error) {
	p, err := launch.Resolve(w.flags, os.Getenv)
	if err != nil {
		return p, usageError{err}
	}
	if p.Size <= 1 {
		return p, nil
	}
	if flagSet(fs, "parts") && d.parts != p.Size {
		source := p.Source
		if source == "torchrun" { // graft launch places its workers the same way
			source = "RANK and WORLD_SIZE, as graft launch and torchrun set them"
		}
		return p, usageError{fmt.Errorf("--parts %d contradicts the job's %d workers (from %s): each worker holds one part; drop --parts or give it %d", d.parts, p.Size, source, p.Size)}
	}
	d.parts = p.Size
	return p, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// dataFlags are fixed by a part directory, which holds the prepared data.
var dataFlags = []string{"dataset", "data-dir", "labels", "split", "lcc", "row-normalize", "features", "features-mmap", "partition", "partition-seed"}
