package job

import (
	"context"
	"io"
	"runtime"
	"testing"
	"weak"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// A bf16 mini-batch run lets the float32 features go once it has rounded
// them: nothing of the job keeps them while it trains. At fp32 the same
// check finds them held, so it could fail.
func TestBF16RunLetsTheFloat32FeaturesGo(t *testing.T) {
	for _, tc := range []struct {
		precision string
		released  bool
	}{{"bf16", true}, {"fp32", false}} {
		s := coraSpec(t)
		s.Dataset, s.Split, s.Features, s.Log = "sbm:2000:10:16:4:7", "", nn.ForceDense, io.Discard
		s.Sampler, s.BatchSize, s.Precision, s.Train.Epochs = "neighbor:5,5", 64, tc.precision, 2
		in, err := s.load()
		if err != nil {
			t.Fatal(err)
		}
		s.Train.Model.Classes = in.classes
		features := weak.Make[tensor.Matrix](in.problem.Features.Dense)
		var released []bool
		_, _, err = s.runMiniBatch(context.Background(), in, fullgraph.Options{}, func(metrics.Epoch) error {
			runtime.GC()
			released = append(released, features.Value() == nil)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(released) != 2 || released[0] != tc.released || released[1] != tc.released {
			t.Fatalf("%s: the float32 features let go after each epoch: %v, want %v", tc.precision, released, tc.released)
		}
	}
}

// A full-graph bf16 run lets the float32 features go too, in one process
// and over in-process parts (whose copies of their rows are bf16).
func TestFullGraphBF16RunLetsTheFloat32FeaturesGo(t *testing.T) {
	for _, tc := range []struct {
		precision string
		parts     int
		released  bool
	}{{"bf16", 1, true}, {"bf16", 2, true}, {"fp32", 1, false}} {
		s := coraSpec(t)
		s.Dataset, s.Split, s.Features, s.Log = "sbm:2000:10:16:4:7", "", nn.ForceDense, io.Discard
		s.Precision, s.Train.Epochs, s.Parts = tc.precision, 2, tc.parts
		in, err := s.load()
		if err != nil {
			t.Fatal(err)
		}
		s.Train.Model.Classes = in.classes
		features := weak.Make[tensor.Matrix](in.problem.Features.Dense)
		var released []bool
		_, _, err = s.runInProcess(context.Background(), in, fullgraph.Options{Precision: train.Precision(tc.precision)}, func(metrics.Epoch) error {
			runtime.GC()
			released = append(released, features.Value() == nil)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(released) != 2 || released[0] != tc.released || released[1] != tc.released {
			t.Fatalf("%s, %d parts: the float32 features let go after each epoch: %v, want %v", tc.precision, tc.parts, released, tc.released)
		}
	}
}
