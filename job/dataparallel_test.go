package job

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// Sampled training over parts resumes where it stopped, whatever the
// sampler: 2 epochs and a resume to 4 give the losses, accuracies and
// bytes of 4 uninterrupted epochs, and save the same model, bit for bit.
// The neighbour sampler runs with each gradient compression too, whose
// residuals the checkpoint keeps.
func TestDataParallelResumeEqualsUninterrupted(t *testing.T) {
	for _, tc := range []struct{ sampler, grad string }{
		{"neighbor:5,5", ""}, {"neighbor:5,5", "topk:0.3"}, {"neighbor:5,5", "topk:0.3,scaled"}, {"neighbor:5,5", "powersgd:2"},
		{"fastgcn:40,40", ""}, {"ladies:40,40", ""},
		{"saint-node:200", ""}, {"saint-edge:100", ""}, {"saint-rw:50:2", ""},
		{"cluster:8:2", ""},
	} {
		t.Run(tc.sampler+"/grad-compress="+tc.grad, func(t *testing.T) { testDataParallelResume(t, tc.sampler, tc.grad) })
	}
}

// testDataParallelResume is TestDataParallelResumeEqualsUninterrupted
// with sampler and the gradients compressed by grad.
func testDataParallelResume(t *testing.T, sampler, grad string) {
	dir := t.TempDir()
	spec := func(run string, epochs int) Spec {
		s := checkpointSpec(t, filepath.Join(dir, run), epochs)
		s.Sampler, s.BatchSize, s.Parts, s.GradCompress = sampler, 16, 3, grad
		s.Save, s.MetricsFile = filepath.Join(dir, run+".st"), filepath.Join(dir, run+".jsonl")
		return s
	}
	whole := spec("whole", 4)
	if _, err := Run(context.Background(), whole); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), spec("resumed", 2)); err != nil {
		t.Fatal(err)
	}
	r := spec("resumed", 4)
	r.Resume, r.ResumeAllow = filepath.Join(dir, "resumed"), []string{"epochs"}
	sum, err := Run(context.Background(), r)
	if err != nil || sum.Epochs != 4 || sum.BytesGrad == 0 || sum.GradCompress != cmpOr(grad, "none") {
		t.Fatalf("resumed: %+v, %v", sum, err)
	}
	a, b := readEpochs(t, whole.MetricsFile), readEpochs(t, r.MetricsFile)
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("%d epochs uninterrupted, %d interrupted and resumed", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Loss != y.Loss || x.TrainAcc != y.TrainAcc || x.ValAcc != y.ValAcc || x.ValLoss != y.ValLoss || x.TestAcc != y.TestAcc ||
			x.BytesStructure != y.BytesStructure || x.BytesFeatures != y.BytesFeatures || x.BytesGrad != y.BytesGrad || x.Batches != y.Batches {
			t.Errorf("epoch %d: uninterrupted %+v\nresumed %+v", i+1, x, y)
		}
	}
	if a[2].Loss == a[1].Loss {
		t.Fatalf("epochs 2 and 3 have the same loss %v: the test would not tell a resumed epoch from a repeated one", a[2].Loss)
	}
	m1, err1 := os.ReadFile(whole.Save)
	m2, err2 := os.ReadFile(r.Save)
	if err1 != nil || err2 != nil || !bytes.Equal(m1, m2) {
		t.Fatalf("the resumed run's model differs from the uninterrupted run's (%v, %v)", err1, err2)
	}
	// The saved model is the best epoch's, maybe one before the resume:
	// the last checkpoints hold the last epoch's parameters and the
	// optimiser's state.
	c1, _, err1 := checkpoint.LoadLatest(whole.CheckpointDir, nil)
	c2, _, err2 := checkpoint.LoadLatest(r.CheckpointDir, nil)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if c1.Step != 4 || c2.Step != 4 || len(c1.Tensors) == 0 || len(c1.Tensors) != len(c2.Tensors) {
		t.Fatalf("last checkpoints: step %d with %d tensors uninterrupted, step %d with %d resumed", c1.Step, len(c1.Tensors), c2.Step, len(c2.Tensors))
	}
	for i, x := range c1.Tensors {
		y := c2.Tensors[i]
		if x.Name != y.Name || !slices.Equal(x.Shape, y.Shape) || !sameBits(x.Data, y.Data) {
			t.Fatalf("the last checkpoints' tensor %s differs from the resumed run's %s", x.Name, y.Name)
		}
	}
}

// sameBits reports whether a and b hold the same bits.
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func readEpochs(t *testing.T, path string) []metrics.Epoch {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	epochs, err := metrics.ReadJSONLines(f)
	if err != nil {
		t.Fatal(err)
	}
	return epochs
}

// Compressed gradients in sampled training over parts send what their
// method promises: top-k at 1% well under a tenth of the exact bytes.
func TestDataParallelCompressesGradients(t *testing.T) {
	bytesGrad := func(grad string) int64 {
		s := checkpointSpec(t, "", 2)
		s.CheckpointDir = ""
		s.Sampler, s.BatchSize, s.Parts, s.GradCompress = "neighbor:5,5", 16, 3, grad
		sum, err := Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return sum.BytesGrad
	}
	exact, topk := bytesGrad(""), bytesGrad("topk:0.01")
	if exact == 0 || topk*10 > exact {
		t.Fatalf("gradient bytes: %d exact, %d with topk:0.01; want at least 10x fewer", exact, topk)
	}
}

// Sampled training over parts in one process lets go of the whole
// problem's graph and features once every rank has cut its part, before
// the first epoch: the parts' rows are then the only copy of the
// features. What the summary reads stays.
func TestDataParallelInProcessDropsWholeProblem(t *testing.T) {
	for _, tc := range []struct {
		features  nn.Storage
		precision string
	}{{nn.Auto, ""}, {nn.ForceDense, "bf16"}} {
		precision := tc.precision
		s := coraSpec(t)
		s.Log, s.Features, s.Precision = io.Discard, tc.features, precision
		s.Sampler, s.BatchSize, s.Parts, s.Train.Epochs = "neighbor:5,5", 64, 3, 1
		in, err := s.load()
		if err != nil {
			t.Fatal(err)
		}
		s.Train.Model.Classes = in.classes
		n, trainNodes := in.problem.Graph.N, len(in.problem.Train)
		epochs := 0
		onEpoch := func(metrics.Epoch) error {
			epochs++
			p := in.problem
			if p.Graph.N != n || p.Graph.Offsets != nil || featureBytes(p.Features) != 0 || p.FeaturesBF16 != nil || p.Labels != nil {
				t.Errorf("precision %q: in the first epoch the process holds the whole problem: %d nodes, %d offsets, %d bytes of features, bf16 %v, %d labels",
					precision, p.Graph.N, len(p.Graph.Offsets), featureBytes(p.Features), p.FeaturesBF16 != nil, len(p.Labels))
			}
			return nil
		}
		if _, _, err := s.runInProcess(context.Background(), in, fullgraph.Options{}, onEpoch); err != nil {
			t.Fatal(err)
		}
		if epochs != 1 || len(in.problem.Train) != trainNodes || in.partFeatures == 0 {
			t.Errorf("precision %q: %d epochs, %d training nodes (had %d), parts' features %d bytes", precision, epochs, len(in.problem.Train), trainNodes, in.partFeatures)
		}
	}
}
