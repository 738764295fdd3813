package nn

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/graft-gnn/graft/tensor"
)

// Config describes a model for NewModel.
type Config struct {
	Model       string  // "gcn", "sage", "gat" or "mlp"
	InFeatures  int     // input feature count
	Hidden      int     // hidden width (per head for GAT)
	Classes     int     // output width
	Layers      int     // number of layers, ≥ 1 (default 2)
	Heads       int     // GAT attention heads of hidden layers, concatenated (default 8)
	OutputHeads int     // GAT heads of the last layer, averaged (default 1)
	Dropout     float64 // feature dropout before every layer, in [0, 1)
	// AttentionDropout is GAT's dropout on attention coefficients, in [0, 1).
	AttentionDropout float64
	// Activation between layers; default relu, or elu for GAT.
	Activation Activation
	Init       Init   // weight initialisation; default glorot
	Seed       uint64 // seeds initialisation and dropout
}

// Model is a stack of graph layers with dropout before each layer and an
// activation between them; its output is one row of logits per target.
type Model struct {
	Config Config
	Layers []Layer

	drops []Dropout
	acts  []Act
	step  uint64
	dout  *tensor.Matrix
}

// Dropout sites: feature dropout before layer i is site i; GAT's attention
// dropout in layer i is attentionSite + i.
const attentionSite = 1 << 20

// NewModel builds and initialises a model.
func NewModel(cfg Config) (*Model, error) {
	if cfg.Layers == 0 {
		cfg.Layers = 2
	}
	if cfg.Heads == 0 {
		cfg.Heads = 8
	}
	if cfg.OutputHeads == 0 {
		cfg.OutputHeads = 1
	}
	if cfg.Activation == "" {
		cfg.Activation = ReLU
		if cfg.Model == "gat" {
			cfg.Activation = ELU
		}
	}
	if cfg.Init == "" {
		cfg.Init = Glorot
	}
	switch {
	case cfg.Layers < 1:
		return nil, fmt.Errorf("nn: %d layers; want at least 1", cfg.Layers)
	case cfg.InFeatures < 1 || cfg.Classes < 1:
		return nil, fmt.Errorf("nn: %d input features and %d classes; want both positive", cfg.InFeatures, cfg.Classes)
	case cfg.Layers > 1 && cfg.Hidden < 1:
		return nil, fmt.Errorf("nn: hidden width %d; want a positive width", cfg.Hidden)
	case cfg.Heads < 1 || cfg.OutputHeads < 1:
		return nil, fmt.Errorf("nn: %d heads and %d output heads; want both positive", cfg.Heads, cfg.OutputHeads)
	case cfg.Dropout < 0 || cfg.Dropout >= 1:
		return nil, fmt.Errorf("nn: dropout %v outside [0, 1)", cfg.Dropout)
	case cfg.AttentionDropout < 0 || cfg.AttentionDropout >= 1:
		return nil, fmt.Errorf("nn: attention dropout %v outside [0, 1)", cfg.AttentionDropout)
	}
	if _, err := ParseActivation(string(cfg.Activation)); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6772616674)) // "graft"
	m := &Model{Config: cfg, drops: make([]Dropout, cfg.Layers), acts: make([]Act, cfg.Layers-1)}
	in := cfg.InFeatures
	for i := 0; i < cfg.Layers; i++ {
		last := i == cfg.Layers-1
		out := cfg.Hidden
		if last {
			out = cfg.Classes
		}
		prefix := "layers." + strconv.Itoa(i)
		var (
			l   Layer
			err error
			w   = out
		)
		switch cfg.Model {
		case "gcn":
			l, err = NewGCN(i, prefix, in, out, cfg.Init, rng)
		case "sage":
			l, err = NewSAGE(i, prefix, in, out, cfg.Init, rng)
		case "mlp":
			l, err = NewLinear(prefix, in, out, cfg.Init, rng)
		case "gat":
			heads, concat := cfg.Heads, true
			if last {
				heads, concat = cfg.OutputHeads, false
			}
			if concat {
				w = heads * out
			}
			l, err = NewGAT(i, prefix, GATConfig{In: in, Out: out, Heads: heads, Concat: concat,
				AttentionDropout: cfg.AttentionDropout, AttentionSite: attentionSite + uint64(i)}, cfg.Init, rng)
		default:
			return nil, fmt.Errorf("nn: unknown model %q (want gcn, sage, gat or mlp)", cfg.Model)
		}
		if err != nil {
			return nil, err
		}
		m.Layers = append(m.Layers, l)
		m.drops[i] = Dropout{P: cfg.Dropout, Site: uint64(i)}
		if !last {
			m.acts[i] = Act{Kind: cfg.Activation}
		}
		in = w
	}
	return m, nil
}

// Forward returns the logits of g's targets from their features x. With
// train set it applies dropout and advances the dropout step; Backward then
// differentiates this pass. The result belongs to the model.
func (m *Model) Forward(g *Graph, x Features, train bool) *tensor.Matrix {
	mode := Mode{Train: train, Seed: m.Config.Seed, Step: m.step}
	if train {
		m.step++
	}
	var out *tensor.Matrix
	for i, l := range m.Layers {
		x = m.drops[i].Forward(g, x, mode)
		out = l.Forward(g, x, mode)
		if i < len(m.acts) {
			out = m.acts[i].Forward(out)
		}
		x = Features{Dense: out}
	}
	return out
}

// Backward overwrites every parameter's gradient with that of the last
// Forward, given the gradient of its logits.
func (m *Model) Backward(dlogits *tensor.Matrix) {
	d := dlogits
	for i := len(m.Layers) - 1; i >= 0; i-- {
		if i < len(m.acts) {
			d = m.acts[i].Backward(d)
		}
		d = m.Layers[i].Backward(d, i > 0)
		if i > 0 {
			d = m.drops[i].Backward(d)
		}
	}
}

// Params returns every parameter, layer by layer.
func (m *Model) Params() []*Param {
	var ps []*Param
	for _, l := range m.Layers {
		ps = append(ps, l.Params()...)
	}
	return ps
}

// LayerParams returns the parameters of layer i.
func (m *Model) LayerParams(i int) []*Param { return m.Layers[i].Params() }

// Step is the number of training passes so far; it keys dropout.
func (m *Model) Step() uint64 { return m.step }

// SetStep sets the dropout step, e.g. when resuming from a checkpoint.
func (m *Model) SetStep(step uint64) { m.step = step }
