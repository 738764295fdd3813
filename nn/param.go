package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/tensor"
)

// Param is a trainable tensor with its gradient.
type Param struct {
	// Name is the PyTorch-style name, e.g. "layers.0.weight".
	Name string
	// Value holds the parameter. Weights are [in, out] so layers compute X·W;
	// biases are 1×n.
	Value *tensor.Matrix
	// Grad has Value's shape; Backward overwrites it.
	Grad *tensor.Matrix
	// Shape is the PyTorch shape the parameter is saved with.
	Shape []int
	// Transposed says Value is the transpose of the saved [out, in] tensor.
	Transposed bool
	// WeightDecay is this parameter's decay coefficient (L2, or decoupled
	// for AdamW); 0 disables it. See SetWeightDecay.
	WeightDecay float64
}

func newParam(name string, rows, cols int, shape []int, transposed bool) *Param {
	return &Param{Name: name, Value: tensor.New(rows, cols), Grad: tensor.New(rows, cols), Shape: shape, Transposed: transposed}
}

// newWeight returns an [in, out] weight saved as PyTorch's [out, in].
func newWeight(name string, in, out int) *Param {
	return newParam(name, in, out, []int{out, in}, true)
}

// newBias returns a zero bias of n values, saved with shape [n].
func newBias(name string, n int) *Param {
	return newParam(name, 1, n, []int{n}, false)
}

// SetWeightDecay sets the decay coefficient of every parameter in params.
// Kipf and Welling's GCN decays only the first layer: call it with the
// first layer's parameters.
func SetWeightDecay(params []*Param, decay float64) {
	for _, p := range params {
		p.WeightDecay = decay
	}
}

// Init names a weight initialisation.
type Init string

const (
	Glorot Init = "glorot" // Xavier uniform: U(±sqrt(6/(fan_in+fan_out)))
	He     Init = "he"     // Kaiming uniform for ReLU: U(±sqrt(6/fan_in))
)

// initUniform fills m from U(−a, a) with a chosen by kind and the fans.
func initUniform(m *tensor.Matrix, kind Init, fanIn, fanOut int, rng *rand.Rand) error {
	var a float64
	switch kind {
	case Glorot, "":
		a = math.Sqrt(6 / float64(fanIn+fanOut))
	case He:
		a = math.Sqrt(6 / float64(fanIn))
	default:
		return fmt.Errorf("nn: unknown initialisation %q (want glorot or he)", kind)
	}
	for i := range m.Data {
		m.Data[i] = float32((2*rng.Float64() - 1) * a)
	}
	return nil
}

// ensure returns *buf resized to rows×cols, reusing its storage when large
// enough. The contents are unspecified. A buffer is first allocated to
// size, and grows with an eighth to spare: full-graph training asks for the
// same sizes every step (an eighth more of every stored activation is
// gigabytes on a large graph), while mini-batches differ in size, and
// growing to each new largest one exactly would reallocate every few
// batches.
func ensure(buf **tensor.Matrix, rows, cols int) *tensor.Matrix {
	m := *buf
	if m == nil {
		m = &tensor.Matrix{}
		*buf = m
	}
	if m.Rows == rows && m.Cols == cols {
		return m
	}
	n := rows * cols
	if cap(m.Data) < n {
		was := cap(m.Data)
		m.Data = hugepage.Float32s(growTo(was, n))[:n]
		memacct.Grown(memacct.Activations, was, cap(m.Data), 4)
	}
	m.Rows, m.Cols, m.Data = rows, cols, m.Data[:n]
	return m
}

// growTo is the capacity a buffer of capacity was grows to for n
// elements: n the first time, with an eighth to spare after.
func growTo(was, n int) int {
	if was == 0 {
		return n
	}
	return n + n/8
}

// ensureSlice is ensure for a plain slice.
func ensureSlice[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		was := cap(*buf)
		*buf = make([]T, n, growTo(was, n))
		var zero T
		memacct.Grown(memacct.Activations, was, cap(*buf), int(unsafe.Sizeof(zero)))
	}
	*buf = (*buf)[:n]
	return *buf
}

// rangeTask adapts a closure to parallel.Task.
type rangeTask func(lo, hi int)

func (f rangeTask) Run(lo, hi int) { f(lo, hi) }
