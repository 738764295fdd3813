package train

import (
	"fmt"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// Precision is what a run holds its features and stored activations in.
// Parameters, optimiser state, gradients and every reduction stay float32
// whatever it is: the bf16 values are widened as they are read.
type Precision string

const (
	FP32 Precision = "fp32"
	BF16 Precision = "bf16"
)

// Products is the precision of a model's matrix products at p: at bf16
// their operands are rounded to bfloat16 and their sums float32
// (nn.Model.SetProducts).
func (p Precision) Products() tensor.Products {
	if p == BF16 {
		return tensor.BF16Products
	}
	return tensor.FP32Products
}

// ParsePrecision reads "fp32" or "bf16"; "" is fp32.
func ParsePrecision(s string) (Precision, error) {
	switch Precision(s) {
	case "", FP32:
		return FP32, nil
	case BF16:
		return BF16, nil
	}
	return "", fmt.Errorf("precision %q: want fp32 or bf16", s)
}

// WithBF16Features returns p with its dense features rounded to bfloat16
// in FeaturesBF16 and Features left empty, so that a caller that drops its
// own p lets the float32 matrix go. Sparse features stay as they are.
func (p Problem) WithBF16Features() Problem {
	if p.Features.Dense != nil {
		p.FeaturesBF16 = tensor.MatrixToBF16(p.Features.Dense)
		p.Features = nn.Features{}
	}
	return p
}

// FeatureCols is the width of p's features, in whichever form it holds
// them.
func (p Problem) FeatureCols() int {
	if p.FeaturesBF16 != nil {
		return p.FeaturesBF16.Cols
	}
	return p.Features.Cols()
}
