package dataparallel

import (
	"slices"
	"testing"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/traintest"
)

// bf16Parts is p's parts with their features in bfloat16, as RunWorker
// holds them at bf16 precision, and p with its features so.
func bf16Parts(t *testing.T, p train.Problem, k int) (train.Problem, []*partstore.Part) {
	t.Helper()
	q := p
	q.Features = nn.BF16Features(tensor.MatrixToBF16(p.Features.Dense))
	return p.WithBF16Features(), Parts(q, classes, randomLayout(t, p, k))
}

// At bf16 precision N workers, whose rows travel in bfloat16, train what
// one process with bf16 features and float32 products (as workers
// multiply) trains on the union batches, and not what a float32 run
// trains; a row is half the bytes.
func TestBF16WorkersEqualOneProcessOnTheUnionBatch(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	const k, batch, epochs = 3, 16, 2
	p16, parts16 := bf16Parts(t, p, k)
	for _, model := range []string{"gcn", "sage", "gat"} {
		cfg := testConfig(model)
		want := runUnion(t, cfg, p16, parts16, []int{5, 3}, batch, epochs)
		got := runParts(t, cfg, parts16, "neighbor:5,3", batch, epochs)
		checkSame(t, model+" at bf16", got, want)
		fp32 := runParts(t, cfg, Parts(p, classes, randomLayout(t, p, k)), "neighbor:5,3", batch, epochs)
		if slices.Equal(got.params, fp32.params) {
			t.Fatalf("%s: the bf16 workers trained the float32 workers' model", model)
		}
	}
	if got, want := parts16[0].Features.BF16.Cols, p.Features.Dense.Cols; got != want {
		t.Fatalf("%d bf16 columns for %d", got, want)
	}
	var x rowStore = rowStore{b16: parts16[0].Features.BF16}
	if x.valueBytes() != 2 || len(x.bytes()) != 2*len(x.b16.Data) {
		t.Fatalf("a bf16 row travels in %d bytes a value", x.valueBytes())
	}
}

// Distributed evaluation at bf16 rounds the hidden layers as one
// process's does: the same sums.
func TestBF16EvaluationEqualsOneProcess(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	p16, parts := bf16Parts(t, p, 3)
	for _, model := range []string{"gcn", "sage", "gat"} {
		cfg := testConfig(model)
		want := oneProcessEvaluation(t, cfg, p16, minibatch.Options{Precision: train.BF16})
		got := workersEvaluation(t, cfg, parts, true)
		if got.ValCorrect != want.ValCorrect || got.TestCorrect != want.TestCorrect || !close32(got.ValLossSum, want.ValLossSum, 1e-5) {
			t.Fatalf("%s: workers' bf16 evaluation %+v, one process's %+v", model, got, want)
		}
		if unrounded := workersEvaluation(t, cfg, parts, false); close32(unrounded.ValLossSum, want.ValLossSum, 1e-7) {
			t.Fatalf("%s: evaluation without rounding gives the rounded loss %v", model, unrounded.ValLossSum)
		}
	}
}
