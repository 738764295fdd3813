package fullgraph

import (
	"errors"
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// FromDataset returns the single-worker Data of d with split s. Features are
// kept dense or sparse as storage says (Auto chooses by density) and, with
// rowNormalize, scaled to sum to one per row as Kipf and Welling do with
// bag-of-words counts; features with negative values (embeddings, the
// generated graphs' Gaussian features) are not counts, whose rows could sum
// to about zero, and are left as they are. d itself is not modified.
func FromDataset(d *dataset.Dataset, s dataset.Split, storage nn.Storage, rowNormalize bool) (Data, error) {
	if d.Labels == nil {
		return Data{}, errors.New("dataset has no labels to train on")
	}
	var x nn.Features
	switch {
	case d.DenseBF16 != nil:
		return Data{}, fmt.Errorf("its features are a mapped bfloat16 file (%s), which mini-batch training alone reads (--sampler with --precision bf16)", d.Mapped.Path)
	case d.Mapped != nil:
		// Mapped: kept dense, without the density scan, and never
		// copied whole but on request.
		m := d.Dense
		switch {
		case storage == nn.ForceSparse:
			return Data{}, fmt.Errorf("--features sparse would copy the mapped features (%s) into memory: keep them dense", d.Mapped.Path)
		case rowNormalize && !slices.ContainsFunc(m.Data, negative):
			return Data{}, fmt.Errorf("row normalisation would copy the mapped features (%s) into memory: turn it off (--row-normalize=false), or normalise the file", d.Mapped.Path)
		}
		x = nn.DenseFeatures(m)
	case d.Sparse != nil:
		a := *d.Sparse
		if rowNormalize && !slices.ContainsFunc(a.Values, negative) {
			a.Values = slices.Clone(a.Values) // nil (all ones) is materialised by RowNormalizeCSR
			nn.RowNormalizeCSR(&a)
		}
		x = nn.NewSparseFeatures(&a, storage)
	case d.Dense != nil:
		m := d.Dense
		if rowNormalize && !slices.ContainsFunc(m.Data, negative) {
			m = m.Clone()
			nn.RowNormalize(m)
			hugepage.Collapse(m.Data) // as the dataset's own (dataset.Load)
		}
		x = nn.NewFeatures(m, storage)
	default:
		// A structure-only graph: a constant feature lets the model learn
		// from the graph alone.
		ones := tensor.New(d.NumNodes(), 1)
		for i := range ones.Data {
			ones.Data[i] = 1
		}
		x = nn.DenseFeatures(ones)
	}
	return Data{
		Block:    nn.WholeGraph(d.Graph),
		Features: x,
		Labels:   d.Labels,
		Train:    s.Train,
		Val:      s.Val,
		Test:     s.Test,
	}, nil
}

func negative(v float32) bool { return v < 0 }
