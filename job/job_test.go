package job

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

func coraSpec(t *testing.T) Spec {
	t.Helper()
	p, err := train.PresetFor("gcn")
	if err != nil {
		t.Fatal(err)
	}
	p.Epochs = 5
	return Spec{Dataset: "cora", Split: "public", RowNormalize: true, Features: nn.Auto, Train: p.Config("gcn", 0, 1),
		Parts: 1, Partition: "random", PartitionSeed: 1}
}

// A job in one process with two parts reports its communication, the load
// balance of its parts and workers, and saves the best parameters.
func TestRunReportsCommunicationAndBalance(t *testing.T) {
	s := coraSpec(t)
	s.Parts, s.Codec, s.Schedule = 2, "topk", "fixed:4"
	s.Save = filepath.Join(t.TempDir(), "m.safetensors")
	var epochs int
	s.Progress = func(metrics.Epoch) { epochs++ }
	sum, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Leader || sum.Epochs != 5 || epochs != 5 || sum.Parts != 2 {
		t.Fatalf("summary %+v after %d progress calls", sum, epochs)
	}
	if sum.BytesFwd <= 0 || sum.BytesGrad <= 0 || sum.BytesTotal != sum.BytesFwd+sum.BytesBwd+sum.BytesGrad || sum.Schedule != "fixed:4" {
		t.Fatalf("communication %+v", sum)
	}
	b := sum.Balance
	if b == nil || b.Workers != 2 || b.Size.Imbalance < 1 || math.Abs(b.Compute.Efficiency*b.Compute.Imbalance-1) > 1e-12 ||
		math.Abs(b.Compute.Imbalance-sum.WorkerImbalance) > 1e-12 {
		t.Fatalf("balance %+v, worker imbalance %v", b, sum.WorkerImbalance)
	}
	if sum.Saved != s.Save {
		t.Fatalf("saved %q, want %q", sum.Saved, s.Save)
	}
	cfg := s.Train
	cfg.Model.Classes = 7
	m, err := train.NewModel(cfg, 1433)
	if err != nil {
		t.Fatal(err)
	}
	if meta, err := nn.LoadParamsFile(s.Save, m.Params()); err != nil || meta["dataset"] != "cora" {
		t.Fatalf("reading the saved parameters: metadata %v, %v", meta, err)
	}
}

// Errors in the Spec are marked as such, so the command can call them
// usage errors; errors in the data are not.
func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		spec bool
	}{
		{"unknown codec", func(s *Spec) { s.Codec = "zip" }, true},
		{"bad schedule", func(s *Spec) { s.Schedule = "linear:1" }, true},
		{"bad link", func(s *Spec) { s.Link = "fast" }, true},
		{"more parts than nodes", func(s *Spec) { s.Parts = 1 << 20 }, true},
		{"missing dataset", func(s *Spec) { s.Dataset = "no-such-dataset" }, false},
	} {
		s := coraSpec(t)
		tc.edit(&s)
		_, err := Run(context.Background(), s)
		if err == nil || IsSpecError(err) != tc.spec {
			t.Errorf("%s: %v (a Spec error: %v, want %v)", tc.name, err, IsSpecError(err), tc.spec)
		}
	}
}
