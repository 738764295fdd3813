package pipeline

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/traintest"
)

// testConfig is the small model the package's tests train.
func testConfig(model string) train.Config { return traintest.Config(model, 3, 4) }

const testSampler, testBatch = "neighbor:4,4,4", 16

// outcome is what a run gives: every epoch's loss and validation
// accuracy, and the kept model's parameters.
type outcome struct {
	losses, valAcc []float64
	params         []float32
}

func (o *outcome) record(e metrics.Epoch) error {
	o.losses, o.valAcc = append(o.losses, e.Loss), append(o.valAcc, e.ValAcc)
	return nil
}

func (o *outcome) keep(t *testing.T, model *nn.Model, err error) outcome {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range model.Params() {
		o.params = append(o.params, p.Value.Data...)
	}
	return *o
}

// reference trains in one process with gradient accumulation over micros
// batches of sampler.
func reference(t *testing.T, cfg train.Config, p train.Problem, sampler string, micros int, mo minibatch.Options) outcome {
	cfg.Accumulate = micros
	var o outcome
	_, loop, err := minibatch.Run(context.Background(), cfg, p, minibatch.RunOptions{Sampler: sampler, BatchSize: testBatch, Options: mo}, o.record)
	if err != nil {
		t.Fatal(err)
	}
	return o.keep(t, loop.Model(), nil)
}

func pipelined(t *testing.T, cfg train.Config, p train.Problem, opts Options) (outcome, Result) {
	if opts.Sampler == "" {
		opts.Sampler = testSampler
	}
	opts.BatchSize = testBatch
	var o outcome
	res, err := Run(context.Background(), cfg, p, opts, o.record)
	return o.keep(t, res.Model, err), res
}

func close64(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// A pipeline of 2 or 3 stages trains a 3-layer GCN, SAGE or GAT as one
// process does with gradient accumulation over the same micro-batches,
// also on a subgraph sampler's weighted batches of one block: the same
// accuracies, the same losses to float rounding (the loss crosses the
// stages' reduction as a float32), and here the same parameters to the
// bit (the dropout at a stage boundary could sum some products in another
// order; on these sizes it does not).
func TestEqualsOneProcessWithAccumulation(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	for _, run := range []struct{ model, sampler string }{{"gcn", testSampler}, {"sage", testSampler}, {"gat", testSampler}, {"gcn", "saint-rw:8:2"}} {
		cfg := testConfig(run.model)
		for _, micros := range []int{1, 3} {
			want := reference(t, cfg, p, run.sampler, micros, minibatch.Options{})
			for _, stages := range []int{2, 3} {
				got, res := pipelined(t, cfg, p, Options{Stages: stages, Micros: micros, Sampler: run.sampler})
				name := func() string {
					return fmt.Sprintf("%s on %s, %d stages, %d micro-batches", run.model, run.sampler, stages, micros)
				}
				if len(got.losses) != cfg.Epochs || len(want.losses) != cfg.Epochs {
					t.Fatalf("%s: %d and %d epochs", name(), len(got.losses), len(want.losses))
				}
				for e := range want.losses {
					if !close64(got.losses[e], want.losses[e], 1e-6) || got.valAcc[e] != want.valAcc[e] {
						t.Fatalf("%s, epoch %d: loss %v, val acc %v; one process %v, %v", name(), e+1, got.losses[e], got.valAcc[e], want.losses[e], want.valAcc[e])
					}
				}
				for i := range want.params {
					if got.params[i] != want.params[i] {
						t.Fatalf("%s: parameter %d is %v, one process %v", name(), i, got.params[i], want.params[i])
					}
				}
				if len(res.Stages) != stages || res.Stages[0].ActivationBytes == 0 || res.Stages[stages-1].GradientBytes == 0 {
					t.Fatalf("%s: stage figures %+v", name(), res.Stages)
				}
			}
		}
	}
}

// With sampled evaluation (whose sums lack the per-class ones) the stages
// train and select as one process does.
func TestSampledEvaluation(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	mo := minibatch.Options{EvalSampler: "neighbor:3,3,3", EvalBatchSize: 32}
	want := reference(t, cfg, p, testSampler, 2, mo)
	got, _ := pipelined(t, cfg, p, Options{Stages: 3, Micros: 2, Options: mo})
	for e := range want.valAcc {
		if got.valAcc[e] != want.valAcc[e] {
			t.Fatalf("epoch %d: val acc %v, one process %v", e+1, got.valAcc[e], want.valAcc[e])
		}
	}
	for i := range want.params {
		if got.params[i] != want.params[i] {
			t.Fatalf("parameter %d is %v, one process %v", i, got.params[i], want.params[i])
		}
	}
}

// At bf16 precision the first stage gathers the batches' features from
// bfloat16 rows, as one process's mini-batch run does, and evaluates with
// its hidden layers stored in bfloat16: the pipeline trains as that run
// does, and not as a float32 one.
func TestBF16EqualsOneProcess(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	bf16 := minibatch.Options{Precision: train.BF16}
	for _, model := range []string{"gcn", "sage", "gat"} {
		cfg := testConfig(model)
		want := reference(t, cfg, p, testSampler, 2, bf16)
		fp32 := reference(t, cfg, p, testSampler, 2, minibatch.Options{})
		got, _ := pipelined(t, cfg, p, Options{Stages: 2, Micros: 2, Options: bf16})
		for e := range want.losses {
			if !close64(got.losses[e], want.losses[e], 1e-6) || got.valAcc[e] != want.valAcc[e] {
				t.Fatalf("%s, epoch %d: loss %v, val acc %v; one process at bf16 %v, %v", model, e+1, got.losses[e], got.valAcc[e], want.losses[e], want.valAcc[e])
			}
		}
		same := true
		for i := range want.params {
			if got.params[i] != want.params[i] {
				t.Fatalf("%s: parameter %d is %v, one process at bf16 %v", model, i, got.params[i], want.params[i])
			}
			same = same && got.params[i] == fp32.params[i]
		}
		if same {
			t.Fatalf("%s: the bf16 pipeline trained as a float32 run does: its features were not rounded", model)
		}
	}
}
