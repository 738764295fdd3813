package job

import (
	"errors"
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// Saved is a model that a job's Save wrote, loaded with what its metadata
// records.
type Saved struct {
	Info  ModelInfo
	Model *nn.Model
}

// LoadSaved reads the model file at path: its ModelInfo, then its
// parameters into the model that info describes.
func LoadSaved(path string) (*Saved, error) {
	h, err := nn.ReadParamsHeader(path)
	if err != nil {
		return nil, err
	}
	info, err := ReadModelInfo(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if err := heldBy(info.Model, h); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	model, err := nn.NewModel(info.Model)
	if err != nil {
		return nil, fmt.Errorf("%s: the model its metadata describes: %v", path, err)
	}
	model.SetBF16(info.BF16)
	params, err := nn.Renamed(model.Params(), info.Model.Model, info.Layout)
	if err != nil {
		return nil, err
	}
	if _, err := nn.LoadParamsFile(path, params); err != nil {
		return nil, err
	}
	return &Saved{Info: info, Model: model}, nil
}

// heldBy checks, before the model is built, that the file's tensors can
// hold the model cfg describes: at least one tensor per layer, and as many
// values as the least the layers' weights take (each layer's input width
// times its output width; GAT's heads and SAGE's second weight only add
// to it). Metadata naming a width of 2^31 would otherwise allocate the
// model before its tensors are compared, and crash.
func heldBy(cfg nn.Config, h *nn.ParamsHeader) error {
	if cfg.Layers > len(h.Names) {
		return fmt.Errorf("its metadata describes %d layers, but it holds %d tensors", cfg.Layers, len(h.Names))
	}
	var held float64
	for _, shape := range h.Shapes {
		n := 1.0
		for _, d := range shape {
			n *= float64(d)
		}
		held += n
	}
	least := nn.LeastParams(cfg)
	if least > held {
		return fmt.Errorf("its metadata describes a model of at least %.0f parameters (%d input features, %d hidden, %d heads, %d classes, %d layers), but its tensors hold %.0f values",
			least, cfg.InFeatures, cfg.Hidden, cfg.Heads, cfg.Classes, cfg.Layers, held)
	}
	return nil
}

// Input is a dataset prepared for a saved model as its training run
// prepared it: the same component, split, preprocessing and storage.
type Input struct {
	Dataset *dataset.Dataset
	Split   dataset.Split
	Data    fullgraph.Data
}

// Prepare loads the dataset source (a registered name or a path, looked up
// in dataDir) and prepares it as the model's run did; split and seed pick
// its split (the run's when split is ""). A dataset without labels can be
// prepared only without a split (split "none"), for predictions.
func (s *Saved) Prepare(source, dataDir string, files dataset.NodeFiles, split string, seed uint64) (*Input, error) {
	info := &s.Info
	ds, err := dataset.LoadWith(source, dataDir, files)
	if err != nil {
		return nil, err
	}
	if info.LCC {
		if ds, err = ds.LargestComponent(); err != nil {
			return nil, err
		}
	}
	if split == "" {
		split, seed = info.Split, info.SplitSeed
	}
	in := &Input{Dataset: ds}
	labelled := ds
	switch {
	case split == "none" || ds.Labels == nil && split == info.Split:
		// Predictions for every node need no labels and no split.
		in.Split = dataset.Split{Name: "none"}
		if ds.Labels == nil {
			unlabelled := *ds
			unlabelled.Labels = slices.Repeat([]int32{dataset.Unlabelled}, ds.NumNodes())
			labelled = &unlabelled
		}
	default:
		if in.Split, err = ds.Split(split, seed); err != nil {
			return nil, err
		}
	}
	storage := map[string]nn.Storage{"dense": nn.ForceDense, "sparse": nn.ForceSparse}[info.Features]
	if in.Data, err = fullgraph.FromDataset(labelled, in.Split, storage, info.RowNormalize); err != nil {
		return nil, fmt.Errorf("dataset %s: %v", ds.Name, err)
	}
	if f := in.Data.Features; (info.BF16 || info.BF16Layers) && f.Dense != nil {
		in.Data.Features = nn.BF16Features(tensor.MatrixToBF16(f.Dense))
	}
	if got, want := in.Data.Features.Cols(), info.Model.InFeatures; got != want {
		return nil, fmt.Errorf("dataset %s has %d feature columns; the model takes %d (was it trained on %s?)", ds.Name, got, want, info.Dataset)
	}
	if ds.Labels != nil && ds.NumClasses > info.Model.Classes {
		return nil, fmt.Errorf("dataset %s has %d classes; the model predicts %d (was it trained on %s?)", ds.Name, ds.NumClasses, info.Model.Classes, info.Dataset)
	}
	return in, nil
}

// Logits runs the model over the whole graph without dropout: one row of
// class scores per node. A model of a bf16 mini-batch run (BF16Layers)
// runs a layer at a time, each hidden layer's output rounded to bfloat16
// as its run's exact evaluation stored it. The result belongs to the
// model.
func (s *Saved) Logits(in *Input) *tensor.Matrix {
	g, x := in.Data.Block, in.Data.Features
	if !s.Info.BF16Layers {
		return s.Model.Forward([]*nn.Block{g}, x, false)
	}
	last := len(s.Model.Layers) - 1
	for l := range last {
		x = nn.BF16Features(tensor.MatrixToBF16(s.Model.ForwardLayer(l, g, x)))
	}
	return s.Model.ForwardLayer(last, g, x)
}

// Scores are a model's accuracies on the three sets of a split and its
// mean loss on the validation set, computed as training computes them.
type Scores struct {
	TrainAcc float64 `json:"train_acc"`
	ValAcc   float64 `json:"val_acc"`
	TestAcc  float64 `json:"test_acc"`
	ValLoss  float64 `json:"val_loss"`
}

// Evaluate scores logits (from Logits) on in's split.
func Evaluate(logits *tensor.Matrix, in *Input) (Scores, error) {
	d := &in.Data
	if len(d.Train)+len(d.Val)+len(d.Test) == 0 {
		return Scores{}, errors.New("the split has no labelled nodes to evaluate on")
	}
	acc := func(rows []int32) float64 {
		if len(rows) == 0 {
			return 0
		}
		return float64(nn.Correct(logits, d.Labels, rows)) / float64(len(rows))
	}
	sc := Scores{TrainAcc: acc(d.Train), ValAcc: acc(d.Val), TestAcc: acc(d.Test)}
	if len(d.Val) > 0 {
		var ce nn.CrossEntropy
		loss, err := ce.Loss(logits, d.Labels, d.Val, float64(len(d.Val)))
		if err != nil {
			return Scores{}, err
		}
		sc.ValLoss = loss
	}
	return sc, nil
}
