package nn

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// Activation names an element-wise non-linearity.
type Activation string

const (
	ReLU      Activation = "relu"
	ELU       Activation = "elu"        // alpha 1
	LeakyReLU Activation = "leaky_relu" // slope 0.01, PyTorch's default
	Identity  Activation = "none"
)

// ParseActivation checks an activation name.
func ParseActivation(s string) (Activation, error) {
	switch a := Activation(s); a {
	case ReLU, ELU, LeakyReLU, Identity:
		return a, nil
	}
	return "", fmt.Errorf("nn: unknown activation %q (want relu, elu, leaky_relu or none)", s)
}

const (
	eluAlpha        = 1
	leakyReLUSlope  = 0.01
	gatLeakyReLUNeg = 0.2
)

// Act applies an Activation and keeps what its backward pass needs.
type Act struct {
	Kind Activation

	x, y, dx *tensor.Matrix
}

// Forward returns Kind(x). The input must stay unchanged until Backward.
func (a *Act) Forward(x *tensor.Matrix) *tensor.Matrix {
	a.x = x
	if a.Kind == Identity {
		return x
	}
	y := ensure(&a.y, x.Rows, x.Cols)
	switch a.Kind {
	case ReLU:
		tensor.ReLU(y, x)
	case ELU:
		tensor.ELU(y, x, eluAlpha)
	case LeakyReLU:
		tensor.LeakyReLU(y, x, leakyReLUSlope)
	default:
		panic(fmt.Sprintf("nn: unknown activation %q", a.Kind))
	}
	return y
}

// Backward returns the gradient of Forward's input.
func (a *Act) Backward(dy *tensor.Matrix) *tensor.Matrix {
	if a.Kind == Identity {
		return dy
	}
	dx := ensure(&a.dx, dy.Rows, dy.Cols)
	switch a.Kind {
	case ReLU:
		tensor.ReLUBackward(dx, dy, a.y)
	case ELU:
		tensor.ELUBackward(dx, dy, a.x, a.y, eluAlpha)
	case LeakyReLU:
		tensor.LeakyReLUBackward(dx, dy, a.x, leakyReLUSlope)
	}
	return dx
}

// activateInPlace sets y = kind(y) for ELU or LeakyReLU, parallel over rows.
func activateInPlace(kind Activation, y *tensor.Matrix) {
	parallel.For(y.Rows, rowGrain(y.Cols), rangeTask(func(lo, hi int) {
		data := y.Data[lo*y.Cols : hi*y.Cols]
		switch kind {
		case ELU:
			for j, v := range data {
				if v <= 0 {
					data[j] = eluAlpha * float32(math.Expm1(float64(v)))
				}
			}
		case LeakyReLU:
			for j, v := range data {
				if v < 0 {
					data[j] = v * leakyReLUSlope
				}
			}
		}
	}))
}

// activateBackwardInPlace sets dy to the gradient of activateInPlace's
// input from its output y: both activations are increasing and keep the
// sign, so input > 0 exactly where y > 0, and for ELU the slope at
// input ≤ 0 is y + alpha.
func activateBackwardInPlace(kind Activation, dy, y *tensor.Matrix) {
	parallel.For(dy.Rows, rowGrain(dy.Cols), rangeTask(func(lo, hi int) {
		d, ys := dy.Data[lo*dy.Cols:hi*dy.Cols], y.Data[lo*y.Cols:hi*y.Cols]
		ys = ys[:len(d)]
		switch kind {
		case ELU:
			for j, v := range ys {
				if v <= 0 {
					d[j] *= v + eluAlpha
				}
			}
		case LeakyReLU:
			for j, v := range ys {
				if v <= 0 {
					d[j] *= leakyReLUSlope
				}
			}
		}
	}))
}
