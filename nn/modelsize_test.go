package nn

import (
	"strings"
	"testing"
)

// LeastParams never exceeds the parameters a model really has, and is
// their count for a GCN (whose layers are a weight and a bias).
func TestLeastParamsIsALowerBound(t *testing.T) {
	for _, cfg := range []Config{
		{Model: "gcn", InFeatures: 30, Hidden: 8, Classes: 3, Layers: 2},
		{Model: "gcn", InFeatures: 30, Hidden: 8, Classes: 3, Layers: 1},
		{Model: "sage", InFeatures: 30, Hidden: 8, Classes: 3, Layers: 3},
		{Model: "gat", InFeatures: 30, Hidden: 8, Classes: 3, Layers: 2, Heads: 4, OutputHeads: 2},
		{Model: "mlp", InFeatures: 30, Hidden: 8, Classes: 3, Layers: 2},
	} {
		m, err := NewModel(cfg)
		if err != nil {
			t.Fatal(err)
		}
		have := 0
		for _, p := range m.Params() {
			have += len(p.Value.Data)
		}
		least := LeastParams(m.Config)
		if least > float64(have) || least < float64(have)/3 {
			t.Errorf("%+v: LeastParams %v for a model of %d parameters", cfg, least, have)
		}
	}
}

// A model whose parameters, gradients and optimiser state would not fit
// in the memory available is refused with its widths named: a class count
// or feature count read from a file of 2^31 crashed the runtime instead.
func TestNewModelRefusesWhatMemoryCannotHold(t *testing.T) {
	defer func(f func() (int64, bool)) { availableMemory = f }(availableMemory)
	cfg := Config{Model: "gcn", InFeatures: 1000, Hidden: 100, Classes: 10, Layers: 2} // 101,000 weights, 1.6 MB
	availableMemory = func() (int64, bool) { return 1 << 20, true }
	_, err := NewModel(cfg)
	if err == nil || !strings.Contains(err.Error(), "1000 input features, hidden width 100 and 10 classes") || !strings.Contains(err.Error(), "take 1.5 MiB, more than the 1.0 MiB of memory available") {
		t.Fatalf("err = %v", err)
	}
	availableMemory = func() (int64, bool) { return 2 << 20, true }
	if _, err := NewModel(cfg); err != nil {
		t.Fatalf("with 2 MiB available: %v", err)
	}
}
