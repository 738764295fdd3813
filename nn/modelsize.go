package nn

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// LeastParams is a lower bound on the parameters of cfg's model, found
// without building it: each layer's weight from its input width to its
// output width, GAT's heads counted (SAGE's second weight, biases and
// attention vectors only add to it). It is a float64 so that absurd
// widths read from a file cannot overflow it.
func LeastParams(cfg Config) float64 {
	heads, outHeads := 1.0, 1.0
	if cfg.Model == "gat" { // concatenated in hidden layers, averaged in the last
		heads, outHeads = float64(max(cfg.Heads, 1)), float64(max(cfg.OutputHeads, 1))
	}
	least, in := 0.0, float64(cfg.InFeatures)
	for l := range max(cfg.Layers, 1) {
		out := float64(cfg.Hidden) * heads
		if l == max(cfg.Layers, 1)-1 {
			out = float64(cfg.Classes) * outHeads
		}
		least += in * out
		in = out
	}
	return least
}

// bytesPerParam is what a parameter takes in training: its value, its
// gradient and the optimiser's two moments, in float32.
const bytesPerParam = 16

// availableMemory bounds the models NewModel builds (a variable for tests).
var availableMemory = sysstat.AvailableMemory

// checkModelSize refuses a model whose parameters, with their gradients
// and optimiser state, would not fit in the memory available: widths come
// from files and flags (a feature count, a class count), and a failed
// allocation crashes the runtime instead of saying which width was too
// large.
func checkModelSize(cfg Config) error {
	need := LeastParams(cfg) * bytesPerParam
	if avail, ok := availableMemory(); ok && need > float64(avail) {
		return fmt.Errorf("nn: a %s model of %d input features, hidden width %d and %d classes (%d layers) has at least %.0f parameters, which with their gradients and optimiser state take %s, more than the %s of memory available",
			cfg.Model, cfg.InFeatures, cfg.Hidden, cfg.Classes, cfg.Layers, LeastParams(cfg), bytesString(need), bytesString(float64(avail)))
	}
	return nil
}

// bytesString formats a size for a message.
func bytesString(n float64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", n/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", n/(1<<20))
}
