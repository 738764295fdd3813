package train

import (
	"fmt"

	"github.com/graft-gnn/graft/nn"
)

// Preset is the training recipe a model's paper publishes.
type Preset struct {
	Layers, Hidden, Heads int
	Dropout               float64
	LR, WeightDecay       float64
	DecayFirstLayerOnly   bool
	Normalize             bool // L2-normalise hidden layer outputs (nn.Config.Normalize)
	Optimizer             nn.Algorithm
	Epochs, Patience      int
}

// PresetFor returns the published hyperparameters of model:
//
//   - gcn: Kipf and Welling (2017): 2 layers, hidden 16, dropout 0.5, Adam
//     with lr 0.01, weight decay 5e-4 on the first layer, 200 epochs. Their
//     early stopping (window 10 on the validation loss) is replaced by model
//     selection on validation accuracy with patience 100.
//   - gat: Veličković et al. (2018): 8 heads of 8 hidden units, ELU, dropout
//     0.6 on features and attention, Adam with lr 0.005 and weight decay
//     5e-4 on all parameters, patience 100 (up to 1000 epochs here).
//   - sage: GraphSAGE-mean as tuned by Shchur et al. (2018): hidden 32,
//     dropout 0.4, lr 0.001, weight decay 0.1 on the first layer, patience
//     50 (up to 1000 epochs here).
func PresetFor(model string) (Preset, error) {
	switch model {
	case "gcn":
		return Preset{Layers: 2, Hidden: 16, Heads: 1, Dropout: 0.5, LR: 0.01, WeightDecay: 5e-4,
			DecayFirstLayerOnly: true, Optimizer: nn.Adam, Epochs: 200, Patience: 100}, nil
	case "gat":
		return Preset{Layers: 2, Hidden: 8, Heads: 8, Dropout: 0.6, LR: 0.005, WeightDecay: 5e-4,
			Optimizer: nn.Adam, Epochs: 1000, Patience: 100}, nil
	case "sage":
		return Preset{Layers: 2, Hidden: 32, Heads: 1, Dropout: 0.4, LR: 0.001, WeightDecay: 0.1,
			DecayFirstLayerOnly: true, Optimizer: nn.Adam, Epochs: 1000, Patience: 50}, nil
	}
	return Preset{}, fmt.Errorf("unknown model %q (want gcn, sage or gat)", model)
}

// Config returns the run configuration of p for a model with the given
// number of classes and seed. GAT also drops attention coefficients with
// the feature dropout rate, as its paper does.
func (p Preset) Config(model string, classes int, seed uint64) Config {
	mc := nn.Config{Model: model, Hidden: p.Hidden, Classes: classes, Layers: p.Layers,
		Heads: p.Heads, Dropout: p.Dropout, Seed: seed, Normalize: p.Normalize}
	if model == "gat" {
		mc.AttentionDropout = p.Dropout
	}
	return Config{
		Model:               mc,
		Optimizer:           nn.OptimizerConfig{Algorithm: p.Optimizer, LR: p.LR},
		WeightDecay:         p.WeightDecay,
		DecayFirstLayerOnly: p.DecayFirstLayerOnly,
		Epochs:              p.Epochs,
		Patience:            p.Patience,
	}
}
