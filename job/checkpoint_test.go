package job

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/metrics"
)

// checkpointSpec is coraSpec checkpointing into dir after every epoch.
func checkpointSpec(t *testing.T, dir string, epochs int) Spec {
	s := coraSpec(t)
	s.Train.Epochs, s.Train.Patience = epochs, 0
	s.CheckpointDir, s.CheckpointEvery = dir, 1
	return s
}

// A new run in a directory holding another run's checkpoints is refused
// at start: it would otherwise keep deleting its own new checkpoints (the
// other run's are numbered higher) and --resume would continue the other
// run. Resuming that run is what the refusal suggests.
func TestNewRunRefusesAnotherRunsCheckpoints(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), checkpointSpec(t, dir, 6)); err != nil {
		t.Fatal(err)
	}
	b := checkpointSpec(t, dir, 2)
	b.Train.Model.Seed = 2
	_, err := Run(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "another run") || !strings.Contains(err.Error(), "--resume "+dir) ||
		!strings.Contains(err.Error(), "(that run was trained with --epochs 6 (now 2), --seed 1 (now 2))") {
		t.Fatalf("a new run in a directory of another run's checkpoints: %v", err)
	}
	// A new run with the first one's settings is told that it can continue
	// it as it is.
	if _, err := Run(context.Background(), checkpointSpec(t, dir, 6)); err == nil || !strings.Contains(err.Error(), "(that run has this one's settings)") {
		t.Fatalf("a new run with the settings of the one in its directory: %v", err)
	}
	// The first run's checkpoints are untouched, and resuming it works.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("directory holds %d files after the refusal, want the first run's 3", len(entries))
	}
	r := checkpointSpec(t, dir, 8)
	r.Resume, r.ResumeAllow = dir, []string{"epochs"}
	sum, err := Run(context.Background(), r)
	if err != nil || sum.Epochs != 8 {
		t.Fatalf("resuming the first run: %+v, %v", sum, err)
	}
}

// Leftovers of an interrupted save are removed when a run starts.
func TestStartRemovesTemporaryCheckpoints(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".tmp-checkpoint-000000007.ckpt-123456")
	if err := os.WriteFile(tmp, []byte("half a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), checkpointSpec(t, dir, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("%s is still there (%v)", tmp, err)
	}
}

// --resume refuses a configuration that changes the run's trajectory,
// naming the flags that differ, in full-graph and mini-batch runs alike;
// --resume-allow lets the epoch count change.
func TestResumeChecksTheConfiguration(t *testing.T) {
	type edit struct {
		name, flag string
		f          func(*Spec)
	}
	for _, tc := range []edit{
		{"seed", "--seed", func(s *Spec) { s.Train.Model.Seed = 9 }},
		{"lr", "--lr", func(s *Spec) { s.Train.Optimizer.LR = 0.5 }},
		{"split", "--split", func(s *Spec) { s.Split = "random:20:30" }},
		{"lcc", "--lcc", func(s *Spec) { s.LCC = true }},
		{"parts", "--parts", func(s *Spec) { s.Parts = 2 }},
		{"epochs", "--epochs", func(s *Spec) { s.Train.Epochs = 7 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Run(context.Background(), checkpointSpec(t, dir, 3)); err != nil {
				t.Fatal(err)
			}
			r := checkpointSpec(t, dir, 3)
			r.Resume = dir
			tc.f(&r)
			_, err := Run(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("resuming with a different %s: %v", tc.flag, err)
			}
		})
	}
	t.Run("partition", func(t *testing.T) {
		dir := t.TempDir()
		a := checkpointSpec(t, dir, 3)
		a.Parts = 2
		if _, err := Run(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		r := checkpointSpec(t, dir, 3)
		r.Parts, r.Partition, r.Resume = 2, "stream", dir
		if _, err := Run(context.Background(), r); err == nil || !strings.Contains(err.Error(), "--partition") {
			t.Fatalf("resuming with a different partition: %v", err)
		}
	})
	t.Run("mini-batch", func(t *testing.T) {
		dir := t.TempDir()
		a := checkpointSpec(t, dir, 2)
		a.Sampler, a.BatchSize = "neighbor:5,5", 64
		if _, err := Run(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		r := a
		r.Resume, r.BatchSize = dir, 32
		if _, err := Run(context.Background(), r); err == nil || !strings.Contains(err.Error(), "--batch-size") {
			t.Fatalf("resuming with a different batch size: %v", err)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := Run(context.Background(), checkpointSpec(t, dir, 3)); err != nil {
			t.Fatal(err)
		}
		r := checkpointSpec(t, dir, 5)
		r.Resume, r.ResumeAllow = dir, []string{"epochs"}
		if sum, err := Run(context.Background(), r); err != nil || sum.Epochs != 5 {
			t.Fatalf("resuming with more epochs, allowed: %+v, %v", sum, err)
		}
	})
}

// "Resume on a different number of workers": a checkpoint of 2 workers
// continues on 3 (--resume-allow parts). Without compression every number
// of workers trains the one-process model to float rounding, so the
// resumed epochs' losses equal an uninterrupted 3-worker run's to rounding.
// Compressed gradients' residuals are reshared among the new workers; a
// delta codec's state, kept per pair of workers, is refused by name.
func TestResumeOnAnotherNumberOfWorkers(t *testing.T) {
	dir := t.TempDir()
	run := func(parts, epochs int, resume bool, grad string) ([]float64, error) {
		s := checkpointSpec(t, dir, epochs)
		s.Parts, s.GradCompress = parts, grad
		if resume {
			s.Resume, s.ResumeAllow = dir, []string{"epochs", "parts"}
		} else {
			s.CheckpointDir = t.TempDir()
			if epochs == 2 {
				s.CheckpointDir = dir
			}
		}
		losses, _, err := runLosses(s)
		return losses, err
	}
	if _, err := run(2, 2, false, ""); err != nil {
		t.Fatal(err)
	}
	resumed, err := run(3, 4, true, "")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := run(3, 4, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(resumed) != 2 || len(whole) != 4 {
		t.Fatalf("%d resumed epochs, %d uninterrupted", len(resumed), len(whole))
	}
	for i, l := range resumed {
		if w := whole[2+i]; math.Abs(l-w) > 1e-4*math.Abs(w) {
			t.Errorf("epoch %d: loss %v resumed on 3 workers, %v uninterrupted", 3+i, l, w)
		}
	}
	// Sampled data-parallel training: with a batch that holds every
	// training node, each step's union batch is the same whatever the
	// number of workers (the neighbour sampler keys draws by node), so a
	// resize equals an uninterrupted run too.
	sampled := func(parts, epochs int, dir string, resume bool) ([]float64, error) {
		s := checkpointSpec(t, dir, epochs)
		s.Sampler, s.BatchSize, s.Parts = "neighbor:5,5", 140, parts
		if resume {
			s.Resume, s.ResumeAllow = dir, []string{"epochs", "parts"}
		} else if epochs != 2 {
			s.CheckpointDir = t.TempDir()
		}
		losses, _, err := runLosses(s)
		return losses, err
	}
	dirS := t.TempDir()
	if _, err := sampled(2, 2, dirS, false); err != nil {
		t.Fatal(err)
	}
	resumedS, err := sampled(3, 4, dirS, true)
	if err != nil {
		t.Fatal(err)
	}
	wholeS, err := sampled(3, 4, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(resumedS) != 2 || len(wholeS) != 4 {
		t.Fatalf("sampled: %d resumed epochs, %d uninterrupted", len(resumedS), len(wholeS))
	}
	for i, l := range resumedS {
		if w := wholeS[2+i]; math.Abs(l-w) > 1e-4*math.Abs(w) {
			t.Errorf("sampled, epoch %d: loss %v resumed on 3 workers, %v uninterrupted", 3+i, l, w)
		}
	}
	// A mini-batch run of one process continues data-parallel on 2.
	dir3 := t.TempDir()
	mb := checkpointSpec(t, dir3, 2)
	mb.Sampler, mb.BatchSize = "neighbor:5,5", 32
	if _, err := Run(context.Background(), mb); err != nil {
		t.Fatal(err)
	}
	mb = checkpointSpec(t, dir3, 4)
	mb.Sampler, mb.BatchSize, mb.Parts, mb.Resume, mb.ResumeAllow = "neighbor:5,5", 32, 2, dir3, []string{"epochs", "parts"}
	if sum, err := Run(context.Background(), mb); err != nil || sum.Epochs != 4 || sum.BytesFeatures == 0 {
		t.Fatalf("a sampled run resumed on 2 workers: %+v, %v", sum, err)
	}
	dir2 := t.TempDir()
	s := checkpointSpec(t, dir2, 2)
	s.Parts, s.GradCompress = 2, "topk:0.3,scaled"
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	s = checkpointSpec(t, dir2, 4)
	s.Parts, s.GradCompress, s.Resume, s.ResumeAllow = 3, "topk:0.3,scaled", dir2, []string{"epochs", "parts"}
	if sum, err := Run(context.Background(), s); err != nil || sum.Epochs != 4 || sum.BytesGrad == 0 {
		t.Fatalf("a run with compressed gradients resumed on 3 workers: %+v, %v", sum, err)
	}
	dir4 := t.TempDir()
	s = checkpointSpec(t, dir4, 2)
	s.Parts, s.Codec = 2, "delta:2"
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	s = checkpointSpec(t, dir4, 4)
	s.Parts, s.Codec, s.Resume, s.ResumeAllow = 3, "delta:2", dir4, []string{"epochs", "parts"}
	if _, err := Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "per pair of workers") {
		t.Fatalf("resizing a run with a delta codec's state: %v", err)
	}
}

// Checkpoints made before --eval-compress was recorded resume: with one
// worker it was unused, over parts its evaluations went whole.
func TestResumeACheckpointWithoutTheEvalCompressSetting(t *testing.T) {
	for _, parts := range []int{1, 2} {
		dir := t.TempDir()
		s := checkpointSpec(t, dir, 2)
		s.Parts = parts
		if _, err := Run(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		st, _, err := checkpoint.LoadLatest(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]string{1: "unused", 2: "none"}[parts]
		if st.Config["eval-compress"] != want {
			t.Fatalf("%d parts: the checkpoint records eval-compress %q, want %q", parts, st.Config["eval-compress"], want)
		}
		delete(st.Config, "eval-compress")
		if _, err := checkpoint.Save(dir, st, 0); err != nil {
			t.Fatal(err)
		}
		r := checkpointSpec(t, dir, 3)
		r.Parts, r.Resume, r.ResumeAllow = parts, dir, []string{"epochs"}
		if sum, err := Run(context.Background(), r); err != nil || sum.Epochs != 3 {
			t.Fatalf("%d parts, resuming: %+v, %v", parts, sum, err)
		}
	}
}

// A run at bf16 with delta coding (--compress auto), whose checkpoints keep
// every worker's bfloat16 reconstructions, resumes to the uninterrupted
// run's losses and accuracy bit for bit.
func TestResumeBF16DeltaEqualsUninterrupted(t *testing.T) {
	dir := t.TempDir()
	run := func(epochs int, dir string, resume bool) ([]float64, Summary) {
		t.Helper()
		s := checkpointSpec(t, dir, epochs)
		s.Parts, s.Codec, s.Precision, s.Log = 3, "auto", "bf16", io.Discard
		if resume {
			s.Resume, s.ResumeAllow = dir, []string{"epochs"}
		}
		losses, sum, err := runLosses(s)
		if err != nil {
			t.Fatal(err)
		}
		return losses, sum
	}
	run(3, dir, false)
	resumed, rsum := run(6, dir, true)
	whole, wsum := run(6, t.TempDir(), false)
	if len(resumed) != 3 || len(whole) != 6 {
		t.Fatalf("%d resumed epochs, %d uninterrupted", len(resumed), len(whole))
	}
	for i, l := range resumed {
		if w := whole[3+i]; l != w {
			t.Errorf("epoch %d: loss %v resumed, %v uninterrupted", 4+i, l, w)
		}
	}
	if rsum.TestAcc != wsum.TestAcc || rsum.Compress != "entropy:delta:2:0:0" {
		t.Errorf("resumed: test accuracy %v with %s; uninterrupted %v", rsum.TestAcc, rsum.Compress, wsum.TestAcc)
	}
}

// runLosses runs s and returns its epochs' training losses with the
// summary.
func runLosses(s Spec) ([]float64, Summary, error) {
	var losses []float64
	s.Progress = func(e metrics.Epoch) { losses = append(losses, e.Loss) }
	sum, err := Run(context.Background(), s)
	return losses, sum, err
}
