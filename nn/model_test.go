package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

func TestNewModelErrors(t *testing.T) {
	ok := Config{Model: "gcn", InFeatures: 4, Hidden: 8, Classes: 3}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"unknown model", func(c *Config) { c.Model = "gin" }},
		{"no classes", func(c *Config) { c.Classes = 0 }},
		{"no features", func(c *Config) { c.InFeatures = 0 }},
		{"no hidden width", func(c *Config) { c.Hidden = 0 }},
		{"negative layers", func(c *Config) { c.Layers = -1 }},
		{"dropout 1", func(c *Config) { c.Dropout = 1 }},
		{"negative attention dropout", func(c *Config) { c.Model, c.AttentionDropout = "gat", -0.1 }},
		{"unknown activation", func(c *Config) { c.Activation = "tanh" }},
		{"unknown init", func(c *Config) { c.Init = "orthogonal" }},
	} {
		cfg := ok
		tc.edit(&cfg)
		if _, err := NewModel(cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	m, err := NewModel(Config{Model: "sage", InFeatures: 4, Classes: 3, Layers: 1})
	if err != nil || len(m.Layers) != 1 {
		t.Errorf("a one-layer model without hidden width: %v", err)
	}
}

func TestModelDeterministicInit(t *testing.T) {
	cfg := Config{Model: "gat", InFeatures: 5, Hidden: 4, Classes: 3, Seed: 9}
	a, _ := NewModel(cfg)
	b, _ := NewModel(cfg)
	cfg.Seed = 10
	c, _ := NewModel(cfg)
	for i, p := range a.Params() {
		for j, v := range p.Value.Data {
			if b.Params()[i].Value.Data[j] != v {
				t.Fatalf("%s differs between two models with one seed", p.Name)
			}
		}
	}
	if a.Params()[0].Value.Data[0] == c.Params()[0].Value.Data[0] {
		t.Error("different seeds gave the same weights")
	}
}

func TestInitBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		kind  Init
		bound float64
	}{{Glorot, math.Sqrt(6.0 / (100 + 50))}, {He, math.Sqrt(6.0 / 100)}} {
		m := tensor.New(100, 50)
		if err := initUniform(m, tc.kind, 100, 50, rng); err != nil {
			t.Fatal(err)
		}
		var maxAbs, sumSq float64
		for _, v := range m.Data {
			maxAbs = max(maxAbs, math.Abs(float64(v)))
			sumSq += float64(v) * float64(v)
		}
		// U(±a) has variance a²/3.
		variance := sumSq / float64(len(m.Data))
		if maxAbs > tc.bound || maxAbs < 0.95*tc.bound || math.Abs(variance-tc.bound*tc.bound/3) > 0.05*tc.bound*tc.bound/3 {
			t.Errorf("%s: max |w| %v, variance %v; want bound %v, variance %v", tc.kind, maxAbs, variance, tc.bound, tc.bound*tc.bound/3)
		}
	}
}

// OutputWidth is the width of what each layer computes, for every model:
// GAT's hidden layers concatenate their heads, its last averages them.
func TestOutputWidth(t *testing.T) {
	const n = 30
	var src, dst []int32
	for i := range n {
		src, dst = append(src, int32(i)), append(dst, int32((i*7+3)%n))
	}
	g, err := graph.FromEdges(n, src, dst, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	b := WholeGraph(g)
	x := tensor.New(n, 5)
	for i := range x.Data {
		x.Data[i] = float32(i%7) - 3
	}
	for _, model := range []string{"gcn", "sage", "gat", "mlp"} {
		for layers := 1; layers <= 3; layers++ {
			m, err := NewModel(Config{Model: model, InFeatures: 5, Hidden: 4, Classes: 3, Layers: layers, Heads: 3, OutputHeads: 2})
			if err != nil {
				t.Fatal(err)
			}
			in := DenseFeatures(x)
			for l := range layers {
				y := m.ForwardLayer(l, b, in)
				want := 4
				switch {
				case l == layers-1:
					want = 3
				case model == "gat":
					want = 12
				}
				if got := m.OutputWidth(l); got != y.Cols || got != want {
					t.Errorf("%s of %d layers: layer %d computes %d columns; OutputWidth %d, want %d", model, layers, l, y.Cols, got, want)
				}
				in = DenseFeatures(y.Clone())
			}
		}
	}
}
