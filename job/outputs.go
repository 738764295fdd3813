package job

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/atomicfile"
)

// CheckOutputs reports, before any work, an output the job could not
// write: the --save and --metrics files and the checkpoint directory
// (--checkpoint-dir, or the --resume directory it keeps checkpointing in).
// Only the leader writes them. Nothing is created: a run refused here
// leaves no file behind. Run calls it; a caller with outputs of its own
// (a profile) may call it first.
func (s *Spec) CheckOutputs() error {
	if s.Place.Rank != 0 {
		return nil
	}
	for _, f := range []struct{ flag, path string }{{"--save", s.Save}, {"--metrics", s.MetricsFile}} {
		if f.path == "" {
			continue
		}
		if err := atomicfile.CheckWritable(f.path); err != nil {
			return fmt.Errorf("%s %v", f.flag, err)
		}
	}
	flag, dir := "--checkpoint-dir", s.CheckpointDir
	if dir == "" {
		flag, dir = "--resume", s.Resume
	}
	if dir != "" {
		if err := atomicfile.CheckWritableDir(dir); err != nil {
			return fmt.Errorf("%s %v", flag, err)
		}
	}
	return nil
}
