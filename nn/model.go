package nn

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
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
	// Normalize scales every hidden layer's output, after its activation,
	// to unit L2 norm per row (GraphSAGE's normalisation).
	Normalize bool
}

// Model is a stack of graph layers with dropout before each layer and an
// activation between them; its output is one row of logits per target.
type Model struct {
	Config Config
	Layers []Layer

	drops []Dropout
	acts  []Act
	// actModes[i] says how activation i ran in the last Forward, actOuts[i]
	// is its output (the layer's own buffer when it ran in place) and
	// fusedDrops[i] the dropout fused into it.
	actModes   []actMode
	actOuts    []*tensor.Matrix
	fusedDrops []dropSpec
	// inputs[i] is what layer i read in the last Forward; signs[i] is
	// where activation i's output was positive, and signed[i] says the
	// next layer's Backward wrote its input gradient over that output
	// (signs.go), so that the activation's backward pass reads the signs.
	inputs   []Features
	signs    [][]uint64
	signed   []bool
	norms    []RowL2Norm // hidden-layer normalisations, with Config.Normalize
	step     uint64
	products tensor.Products // SetProducts
	narrow   narrowing       // hidden outputs in bf16 (narrow.go)

	selectedRows *tensor.Matrix // Selected input rows copied, for a layer that cannot read them in place
}

// actMode is how an activation between layers runs.
type actMode uint8

const (
	// actSeparate runs Act and then the next layer's Dropout, each with its
	// own output buffer.
	actSeparate actMode = iota
	// actReLUInPlace applies ReLU in place on the layer's output; its
	// gradient is masked in place by that output.
	actReLUInPlace
	// actReLUDropInPlace applies ReLU and the next layer's dropout in place
	// on the layer's output y = relu(x)·keep/(1−p). The combined gradient
	// is dy/(1−p) where y > 0 and 0 elsewhere, so no mask is stored.
	actReLUDropInPlace
	// actInPlace applies ELU or LeakyReLU in place; the next layer's dropout
	// runs separately. Both keep the sign of their input, so the gradient
	// is computed from the output alone.
	actInPlace
)

// Dropout sites: feature dropout before layer i is site i; GAT's attention
// dropout in layer i is attentionSite + i.
const attentionSite = 1 << 20

// WithDefaults returns c with its unset fields at their defaults: 2
// layers, 8 heads and 1 output head (GAT), ReLU (ELU for GAT), Glorot
// initialisation.
func (c Config) WithDefaults() Config {
	cfg := c
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
	return cfg
}

// OutputWidth is the width of layer i's output: the classes for the last
// layer (whose GAT heads are averaged), the hidden width for the others,
// times the heads for GAT, which concatenates them.
func (c Config) OutputWidth(i int) int {
	c = c.WithDefaults()
	switch {
	case i == c.Layers-1:
		return c.Classes
	case c.Model == "gat":
		return c.Hidden * c.Heads
	}
	return c.Hidden
}

// OutputWidth is the width of layer i's output (Config.OutputWidth).
func (m *Model) OutputWidth(i int) int { return m.Config.OutputWidth(i) }

// NewModel builds and initialises a model.
func NewModel(cfg Config) (*Model, error) {
	cfg = cfg.WithDefaults()
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
	if err := checkModelSize(cfg); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6772616674)) // "graft"
	m := &Model{Config: cfg, drops: make([]Dropout, cfg.Layers), acts: make([]Act, cfg.Layers-1),
		actModes: make([]actMode, cfg.Layers-1), actOuts: make([]*tensor.Matrix, cfg.Layers-1),
		fusedDrops: make([]dropSpec, cfg.Layers-1), inputs: make([]Features, cfg.Layers),
		signs: make([][]uint64, cfg.Layers-1), signed: make([]bool, cfg.Layers-1)}
	if cfg.Normalize {
		m.norms = make([]RowL2Norm, cfg.Layers-1)
	}
	in := cfg.InFeatures
	work := new(*tensor.Matrix) // the layers' transient buffer
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
		)
		switch cfg.Model {
		case "gcn":
			var gcn *GCN
			if gcn, err = NewGCN(i, prefix, in, out, cfg.Init, rng); err == nil {
				gcn.work.share(work)
			}
			l = gcn
		case "sage":
			var sage *SAGE
			if sage, err = NewSAGE(i, prefix, in, out, cfg.Init, rng); err == nil {
				sage.work.share(work)
			}
			l = sage
		case "mlp":
			l, err = NewLinear(prefix, in, out, cfg.Init, rng)
		case "gat":
			heads, concat := cfg.Heads, true
			if last {
				heads, concat = cfg.OutputHeads, false
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
		in = cfg.OutputWidth(i)
	}
	return m, nil
}

// Forward returns the logits of the last block's destinations from the
// features x of the first block's input rows. Layer i runs on blocks[i]
// (a sampled mini-batch has one block per layer, each one's destinations
// the next one's sources); a single block serves every layer (the whole
// graph, or a partition's local graph). With train set it applies dropout
// and advances the dropout step; Backward then differentiates this pass.
// The result belongs to the model.
func (m *Model) Forward(blocks []*Block, x Features, train bool) *tensor.Matrix {
	return m.ForwardRange(0, len(m.Layers), blocks, x, train)
}

// ForwardRange runs layers [lo, hi) of a pass as Forward runs them all:
// x is layer lo's input (the features for lo = 0, else what the range
// before it returned), and the result is layer hi−1's output after its
// activation and normalisation. A model split into stages (a pipeline)
// runs one range per stage; ranges [0, k) and [k, L) compute what Forward
// computes, but that layer k's dropout is applied by layer k rather than
// fused into layer k−1's activation (the same values, whose products may
// be summed in another order). With train set it applies dropout keyed by
// the model's dropout step and advances the step; BackwardRange then
// differentiates this pass.
func (m *Model) ForwardRange(lo, hi int, blocks []*Block, x Features, train bool) *tensor.Matrix {
	if len(blocks) != 1 && len(blocks) != len(m.Layers) {
		panic(fmt.Sprintf("nn: %d blocks for a model of %d layers", len(blocks), len(m.Layers)))
	}
	if lo < 0 || hi > len(m.Layers) || lo >= hi {
		panic(fmt.Sprintf("nn: layers [%d, %d) of a model of %d", lo, hi, len(m.Layers)))
	}
	mode := Mode{Train: train, Seed: m.Config.Seed, Step: m.step}
	if train {
		m.step++
	}
	m.plan(lo, hi, len(blocks))
	var out *tensor.Matrix
	for i := lo; i < hi; i++ {
		out = m.layer(i, lo, hi, blocks[min(i, len(blocks)-1)], x, mode)
		x = m.nextInput(i, out, train)
	}
	return out
}

// ForwardLayer runs layer i of an evaluation pass (no dropout) on block g
// from x, its input rows, with the activation and normalisation that
// follow the layer: one step of layer-wise inference, which computes every
// node's output of a layer, a block of destinations at a time, before the
// next layer. The result belongs to the model and is overwritten by its
// next pass.
func (m *Model) ForwardLayer(i int, g *Block, x Features) *tensor.Matrix {
	return m.layer(i, i, i+1, g, x, Mode{Seed: m.Config.Seed, Step: m.step})
}

// layer runs layer i of a pass over layers [lo, hi) on g: dropout, the
// layer, its activation and normalisation. The activation of a layer
// before hi may take the next layer's dropout with it.
func (m *Model) layer(i, lo, hi int, g *Block, x Features, mode Mode) *tensor.Matrix {
	if x.Selected != nil && !m.readsSelected(i, g, x) {
		x = Features{Dense: x.Selected.copyRows(&m.selectedRows)}
	}
	if m.dropsItself(i, lo) || !mode.Train {
		x = m.drops[i].forwardLazy(g, x, mode)
	}
	m.inputs[i] = x
	out := m.Layers[i].Forward(g, x, mode)
	if i < len(m.acts) {
		out = m.activate(i, g, out, mode, i+1 < hi)
	}
	if i < len(m.norms) {
		out = m.norms[i].Forward(out)
	}
	return out
}

// ReadsSelected reports whether a training pass over blocks from its
// first layer reads Selected input rows where they lie (see Selected):
// whether a mini-batch can leave its input rows in the feature matrix.
// Otherwise the pass copies them first.
func (m *Model) ReadsSelected(blocks []*Block, x Features) bool {
	return len(blocks) > 0 && m.readsSelected(0, blocks[0], x)
}

// ReadsSelectedHead reports whether a pass that reads Selected rows where
// they lie (ReadsSelected) reads their Head: whether its first layer reads
// its destinations' own rows, as GraphSAGE does and GCN does not.
func (m *Model) ReadsSelectedHead() bool {
	r, ok := m.Layers[0].(selectedReader)
	return ok && r.readsHead()
}

// readsSelected reports whether layer i reads Selected rows x on g: it
// aggregates them first. A dropout that applies to them, on float32 or
// bf16 rows, is applied as they are gathered.
func (m *Model) readsSelected(i int, g *Block, x Features) bool {
	r, ok := m.Layers[i].(selectedReader)
	if !ok || x.Selected == nil {
		return false
	}
	return r.aggregatesFirst(g, x)
}

// dropsItself reports whether layer i of a training pass over layers from
// lo applied its own dropout, rather than the activation before it.
func (m *Model) dropsItself(i, lo int) bool {
	return i == lo || m.actModes[i-1] != actReLUDropInPlace
}

// activate applies activation i, and the dropout of layer i+1 with it when
// it can and fuse is set, to y, the output of layer i. Layers do not read
// their output in Backward, so ReLU runs in place on it.
func (m *Model) activate(i int, g *Block, y *tensor.Matrix, mode Mode, fuse bool) *tensor.Matrix {
	m.actOuts[i] = y
	switch m.acts[i].Kind {
	case ELU, LeakyReLU:
		m.actModes[i] = actInPlace
		activateInPlace(m.acts[i].Kind, y)
		return y
	case ReLU:
	default:
		m.actModes[i] = actSeparate
		return m.acts[i].Forward(y)
	}
	d := &m.drops[i+1]
	if !mode.Train || !fuse || d.P <= 0 || m.Config.Normalize { // dropout follows the normalisation
		m.actModes[i] = actReLUInPlace
		tensor.ReLU(y, y)
		return y
	}
	m.actModes[i] = actReLUDropInPlace
	m.fusedDrops[i] = newDropSpec(d.P, mode, d.Site)
	s := &m.fusedDrops[i]
	parallel.For(y.Rows, rowGrain(y.Cols), rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := y.Row(r)
			vec.ReLU(row, row)
			s.apply(row, row, g.globalID(r))
		}
	}))
	return y
}

// activateBackward returns the gradient of activation i's input (with the
// fused dropout's), computed in place on dy where the activation ran in
// place.
func (m *Model) activateBackward(i int, dy *tensor.Matrix) *tensor.Matrix {
	signed := m.signed[i]
	m.signed[i] = false
	switch m.actModes[i] {
	case actReLUInPlace:
		if signed {
			reluBackwardSigns(dy, m.signs[i], 1, false)
			return dy
		}
		tensor.ReLUBackward(dy, dy, m.actOuts[i])
		return dy
	case actInPlace:
		activateBackwardInPlace(m.acts[i].Kind, dy, m.actOuts[i])
		return dy
	case actReLUDropInPlace:
		y, scale := m.actOuts[i], m.fusedDrops[i].scale
		if signed {
			reluBackwardSigns(dy, m.signs[i], scale, true)
			return dy
		}
		parallel.For(dy.Rows, rowGrain(dy.Cols), rangeTask(func(lo, hi int) {
			for r := lo; r < hi; r++ {
				row := dy.Row(r)
				vec.ReLUBackward(row, row, y.Row(r))
				vec.Scale(scale, row)
			}
		}))
		return dy
	}
	return m.acts[i].Backward(dy)
}

// OutputFree reports whether the caller may write over the last
// Forward's output (its gradient, CrossEntropy.ForwardInPlace) before
// Backward: layers do not read their output in Backward, and the last
// layer does not take its scratch from it there (scratch).
func (m *Model) OutputFree() bool {
	s, ok := m.Layers[len(m.Layers)-1].(interface{ scratchesOutput() bool })
	return !ok || !s.scratchesOutput()
}

// Backward overwrites every parameter's gradient with that of the last
// Forward, given the gradient of its logits.
func (m *Model) Backward(dlogits *tensor.Matrix) {
	m.BackwardRange(0, len(m.Layers), dlogits)
}

// BackwardRange overwrites the gradients of layers [lo, hi) with those of
// the last ForwardRange over them, given the gradient of its output, and
// returns the gradient of its input x (nil for lo = 0): what the range
// before it takes as the gradient of its output. The result belongs to
// the model.
func (m *Model) BackwardRange(lo, hi int, dout *tensor.Matrix) *tensor.Matrix {
	d := dout
	for i := hi - 1; i >= lo; i-- {
		if i < len(m.norms) {
			d = m.norms[i].Backward(d)
		}
		if i < len(m.acts) {
			d = m.activateBackward(i, d)
		}
		d = m.layerBackward(i, lo, d)
		if i > 0 && m.dropsItself(i, lo) {
			d = m.drops[i].Backward(d)
		}
	}
	if lo == 0 {
		return nil
	}
	return d
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
