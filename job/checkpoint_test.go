package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
