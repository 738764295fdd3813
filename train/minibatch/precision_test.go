package minibatch

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
	"github.com/graft-gnn/graft/train/traintest"
)

// roundedBF16 is x with every value rounded to bf16 and widened again.
func roundedBF16(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = bf16.ToFloat32(bf16.FromFloat32(v))
	}
	return out
}

// The bf16 gather hands the model float32 rows that are exactly the
// float32 features rounded to bf16, whatever the batch's size (the
// parallel split of its rows) and with repeated rows.
func TestBF16GatherIsRoundedRows(t *testing.T) {
	withEachGroupSize(t, testBF16GatherIsRoundedRows)
}

func testBF16GatherIsRoundedRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ rows, cols, batch int }{{50, 7, 13}, {3000, 33, 2500}, {10, 1, 10}} {
		x := tensor.New(tc.rows, tc.cols)
		for i := range x.Data {
			x.Data[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
		}
		ids := make([]int32, tc.batch)
		for i := range ids {
			ids[i] = int32(rng.IntN(tc.rows))
		}
		var g gatherer
		in := inputOf(train.Problem{Features: nn.DenseFeatures(x)}.WithBF16Features())
		got := in.gather(&g, ids).Dense
		want := roundedBF16(x.SelectRows(ids).Data)
		if got.Rows != tc.batch || got.Cols != tc.cols || !slices.Equal(got.Data, want) {
			t.Fatalf("%+v: the gathered rows are not the rounded features", tc)
		}
		changed := 0 // rounding changed some: the check could fail
		for i, v := range x.SelectRows(ids).Data {
			if v != got.Data[i] {
				changed++
			}
		}
		if changed == 0 {
			t.Fatalf("%+v: no value changed by rounding", tc)
		}
	}
}

// At bf16 the stepper holds the features in half the bytes and no float32
// copy of them.
func TestBF16FeaturesTakeHalfTheBytes(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	fp32Bytes := int64(4 * len(p.Features.Dense.Data))
	q := p.WithBF16Features()
	if q.FeaturesBF16 == nil || q.FeaturesBF16.Bytes() != fp32Bytes/2 || q.Features.Dense != nil || q.Features.Sparse != nil {
		t.Fatalf("bf16 features: %d bytes for %d in float32, float32 kept: %v", q.FeaturesBF16.Bytes(), fp32Bytes, q.Features.Dense != nil)
	}
	s := neighborStepper(t, testConfig("sage"), q, 64, Options{Precision: train.BF16})
	defer s.Close()
	if s.feed.x.x16 != q.FeaturesBF16 || s.feed.x.x.Dense != nil {
		t.Fatal("the feed does not gather from the bf16 features alone")
	}
	// Sparse features stay as they are.
	sp := train.Problem{Features: nn.NewFeatures(p.Features.Dense, nn.ForceSparse)}.WithBF16Features()
	if sp.FeaturesBF16 != nil || sp.Features.Sparse == nil {
		t.Fatal("sparse features were converted")
	}
}

// Exact evaluation at bf16 is float32 evaluation whose features and
// hidden layers' outputs are rounded to bf16 as they are stored: the same
// logits, bit for bit. Its hidden layers take half the bytes.
func TestBF16EvaluationIsRoundedFP32Evaluation(t *testing.T) {
	p := traintest.SBMProblem(t, 700)
	cfg := testConfig("sage")
	cfg.Model.Layers = 3
	model, err := train.NewModel(cfg, p.Features.Cols())
	if err != nil {
		t.Fatal(err)
	}
	hoods := sample.NewNeighborhoods(p.Graph, sample.Mean)
	e16 := newEvaluator(model, p.WithBF16Features(), hoods, true)
	got, err := e16.evaluate()
	if err != nil {
		t.Fatal(err)
	}
	L := len(model.Layers)
	logits16 := e16.cur[(L-1)%2]

	rounded := p
	rounded.Features = nn.DenseFeatures(tensor.FromSlice(p.Features.Rows(), p.Features.Cols(), roundedBF16(p.Features.Dense.Data)))
	ref := newEvaluator(model, rounded, hoods, false)
	x := inputOf(rounded)
	var out *tensor.Matrix
	for l := range L {
		nodes := ref.nodes
		if l == L-1 {
			nodes = ref.labelled
		}
		out = &tensor.Matrix{}
		if err := ref.layer(l, x, nodes, (*outputF32)(out)); err != nil {
			t.Fatal(err)
		}
		if l < L-1 {
			out.Data = roundedBF16(out.Data)
		}
		x = input{x: nn.DenseFeatures(out)}
	}
	if !slices.Equal(logits16.Data, out.Data) {
		t.Fatal("bf16 evaluation's logits differ from float32 evaluation of rounded inputs and outputs")
	}
	// Against plain float32 the loss moves by no more than rounding's
	// relative 2⁻⁹ a value could explain, amplified over three layers.
	want, err := newEvaluator(model, p, hoods, false).evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.ValLossSum-want.ValLossSum) > 0.01*math.Abs(want.ValLossSum) || got.ValCount != want.ValCount {
		t.Fatalf("bf16 validation loss %v, float32 %v", got.ValLossSum, want.ValLossSum)
	}
	if h16, h32 := 2*len(e16.cur16[0].Data), 4*p.Graph.N*cfg.Model.Hidden; h16 != h32/2 {
		t.Fatalf("a hidden layer holds %d bytes at bf16, %d at float32", h16, h32)
	}
	if e16.cur[0].Data != nil && len(e16.cur[0].Data) != len(logits16.Data) {
		t.Fatal("a float32 hidden layer was stored")
	}
}

// bf16 runs (bf16 features and products) give the same bits at GOMAXPROCS
// 1, 2 and 7, and train as well as
// float32 on an easy graph: mean test accuracy over three seeds within 1.5
// points (a test node is 0.16 points of one seed's accuracy).
func TestBF16RunsAreDeterministicAndTrain(t *testing.T) {
	p := traintest.SBMProblem(t, 2000)
	run := func(procs int, prec train.Precision, seed uint64) (outcome, float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		cfg := testConfig("sage")
		cfg.Epochs, cfg.Model.Seed = 8, seed
		var o outcome
		res, loop, err := Run(t.Context(), cfg, p, RunOptions{Sampler: "neighbor:5,3", BatchSize: 40, Options: Options{Precision: prec}},
			func(m metrics.Epoch) error {
				o.losses, o.valAcc = append(o.losses, m.Loss), append(o.valAcc, m.ValAcc)
				return nil
			})
		o = collect(t, res, loop, err, &o)
		return o, res.Best.TestAcc
	}
	one, _ := run(1, train.BF16, 42)
	for _, procs := range []int{2, 7} {
		other, _ := run(procs, train.BF16, 42)
		if !slices.Equal(one.losses, other.losses) || !slices.Equal(one.params, other.params) {
			t.Fatalf("GOMAXPROCS %d: losses %v, want %v", procs, other.losses, one.losses)
		}
	}
	fp32, _ := run(2, train.FP32, 42)
	if slices.Equal(fp32.params, one.params) {
		t.Fatal("bf16 trained the same parameters as float32: its features were not rounded")
	}
	var acc16, acc32 float64
	for seed := uint64(1); seed <= 3; seed++ {
		_, a16 := run(2, train.BF16, seed)
		_, a32 := run(2, train.FP32, seed)
		acc16, acc32 = acc16+a16/3, acc32+a32/3
	}
	t.Logf("mean test accuracy %.4f at bf16, %.4f at float32", acc16, acc32)
	if acc32 < 0.7 || math.Abs(acc16-acc32) > 0.015 {
		t.Fatalf("mean test accuracy %.4f at bf16, %.4f at float32", acc16, acc32)
	}
}

// Full-graph training refuses bf16 features rather than finding none.
func TestFullGraphRefusesBF16Features(t *testing.T) {
	p := traintest.SBMProblem(t, 100)
	_, _, err := fullgraph.RunInProcess(t.Context(), testConfig("gcn"), p.WithBF16Features(), nil, fullgraph.Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "bf16") {
		t.Fatalf("full-graph training on bf16 features: %v", err)
	}
}
