package decentral

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Activation is a scalar nonlinearity applied element-wise after a layer.
type Activation int

const (
	Identity Activation = iota
	Sigmoid
	Tanh
	LeakyReLU
)

func (a Activation) String() string {
	switch a {
	case Identity:
		return "identity"
	case Sigmoid:
		return "sigmoid"
	case Tanh:
		return "tanh"
	case LeakyReLU:
		return "leaky-relu"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

func (a Activation) apply(z float64) float64 {
	switch a {
	case Sigmoid:
		return 1 / (1 + math.Exp(-z))
	case Tanh:
		return math.Tanh(z)
	case LeakyReLU:
		if z < 0 {
			return 0.2 * z
		}
	}
	return z
}

// derivative returns the activation's derivative at z given its value h.
func (a Activation) derivative(z, h float64) float64 {
	switch a {
	case Sigmoid:
		return h * (1 - h)
	case Tanh:
		return 1 - h*h
	case LeakyReLU:
		if z < 0 {
			return 0.2
		}
	}
	return 1
}

// Model is a graph-filter GNN. Layer l maps node features H (N×Dims[l]) to
//
//	H' = act( Σ_{k=0..Hops} S^k H W_{l,k} + b_l )
//
// where S is the graph shift operator. With Hops = 1 this is the authors'
// `x W1 + S x W2` layer. Every layer but the last uses Hidden; the last uses
// Output.
type Model struct {
	Dims   []int // feature widths, input first: Dims[0] → … → Dims[L]
	Hops   int   // K ≥ 1: hops mixed per layer, and rounds per layer
	Bias   bool
	Hidden Activation
	Output Activation
}

// Layers is L, the number of graph-filter layers.
func (m Model) Layers() int { return len(m.Dims) - 1 }

// Validate reports a model that cannot be built.
func (m Model) Validate() error {
	if len(m.Dims) < 2 {
		return fmt.Errorf("decentral: model needs at least one layer, got dims %v", m.Dims)
	}
	for _, d := range m.Dims {
		if d < 1 {
			return fmt.Errorf("decentral: model widths must be positive, got %v", m.Dims)
		}
	}
	if m.Hops < 1 {
		return fmt.Errorf("decentral: model needs at least one hop per layer, got %d", m.Hops)
	}
	return nil
}

// NumParams is the length of the flat parameter vector.
func (m Model) NumParams() int {
	n := 0
	for l := range m.Layers() {
		n += m.layerSize(l)
	}
	return n
}

func (m Model) layerSize(l int) int {
	n := (m.Hops + 1) * m.Dims[l] * m.Dims[l+1]
	if m.Bias {
		n += m.Dims[l+1]
	}
	return n
}

// layerParams splits the flat parameters of layer l into its tap matrices
// W_{l,k} (Dims[l]×Dims[l+1], row-major) and its bias (nil without bias).
// The slices share storage with params, so this also slices gradients.
func (m Model) layerParams(params []float64, l int) (taps [][]float64, bias []float64) {
	off := 0
	for j := range l {
		off += m.layerSize(j)
	}
	in, out := m.Dims[l], m.Dims[l+1]
	taps = make([][]float64, m.Hops+1)
	for k := range taps {
		taps[k] = params[off : off+in*out]
		off += in * out
	}
	if m.Bias {
		bias = params[off : off+out]
	}
	return taps, bias
}

func (m Model) activation(l int) Activation {
	if l == m.Layers()-1 {
		return m.Output
	}
	return m.Hidden
}

// Init draws parameters with Glorot-normal scale, the same for every
// agent when given the same rng state.
func (m Model) Init(rng *rand.Rand) []float64 {
	p := make([]float64, m.NumParams())
	for l := range m.Layers() {
		taps, _ := m.layerParams(p, l)
		std := math.Sqrt(2 / float64(m.Dims[l]+m.Dims[l+1]) / float64(m.Hops+1))
		for _, w := range taps {
			for i := range w {
				w[i] = std * rng.NormFloat64()
			}
		}
	}
	return p
}

// vecMat adds x·W (W is len(x)×len(out), row-major) to out.
func vecMat(out, x, w []float64) {
	cols := len(out)
	for i, xi := range x {
		if xi == 0 {
			continue
		}
		row := w[i*cols : (i+1)*cols]
		for j, wij := range row {
			out[j] += xi * wij
		}
	}
}

// matVec adds W·y (W is len(out)×len(y), row-major) to out: the product
// with the transpose of a tap when going backward.
func matVec(out, w, y []float64) {
	cols := len(y)
	for i := range out {
		row := w[i*cols : (i+1)*cols]
		s := 0.0
		for j, yj := range y {
			s += row[j] * yj
		}
		out[i] += s
	}
}

// outerAdd adds x yᵀ to W (len(x)×len(y), row-major).
func outerAdd(w, x, y []float64) {
	cols := len(y)
	for i, xi := range x {
		if xi == 0 {
			continue
		}
		row := w[i*cols : (i+1)*cols]
		for j, yj := range y {
			row[j] += xi * yj
		}
	}
}
