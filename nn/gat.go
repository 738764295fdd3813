package nn

import (
	"errors"
	"math/rand/v2"

	"github.com/graft-gnn/graft/tensor"
)

// GATConfig shapes a GAT layer.
type GATConfig struct {
	In, Out, Heads   int
	Concat           bool // concatenate heads (Heads·Out outputs) or average them (Out)
	AttentionDropout float64
	AttentionSite    uint64 // dropout site of the attention coefficients
}

// GAT is a graph attention layer (Veličković et al.; PyG's GATConv).
type GAT struct {
	Weight, AttSrc, AttDst, Bias *Param
	cfg                          GATConfig
	index                        int
}

func NewGAT(index int, prefix string, cfg GATConfig, init Init, rng *rand.Rand) (*GAT, error) {
	return nil, errors.New("nn: GAT is not implemented yet")
}

func (l *GAT) Params() []*Param { return []*Param{l.Weight, l.AttSrc, l.AttDst, l.Bias} }

func (l *GAT) Forward(g *Graph, x Features, mode Mode) *tensor.Matrix { panic("todo") }

func (l *GAT) Backward(dy *tensor.Matrix, inputGrad bool) *tensor.Matrix { panic("todo") }
