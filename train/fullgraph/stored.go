package fullgraph

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

// StoredData returns what the worker holding sp trains on, like PartOf,
// with the operators a model aggregating as agg reads; halo connects it to
// the other workers (nil with one part).
func StoredData(sp *partstore.Part, agg sample.Aggregation, halo nn.Halo) (Data, error) {
	return storedData(sp, operatorsOf(agg), halo)
}

// storedData is StoredData building the operators set names.
func storedData(sp *partstore.Part, set operatorSet, halo nn.Halo) (Data, error) {
	lg, err := partBlock(&sp.Part, sp.ColDegree, set, halo)
	if err != nil {
		return Data{}, err
	}
	return Data{Block: lg, Features: sp.Features, Labels: sp.Labels, Train: sp.Train, Val: sp.Val, Test: sp.Test}, nil
}

// partsSite is where the workers check that they hold parts of one layout.
const partsSite = "parts.check"

// RunStoredWorker is RunWorker for a worker that holds only its stored
// part: sp must be part c.Rank() of a layout with c.Size() parts, and the
// workers check that their parts come from the same layout.
func RunStoredWorker(ctx context.Context, c comm.Communicator, cfg train.Config, sp *partstore.Part, opts Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	k := len(sp.Part.HaloStart) - 1
	if k != c.Size() || sp.Part.ID != c.Rank() {
		return train.Result{}, nil, fmt.Errorf("fullgraph: rank %d of %d holds stored part %d of %d", c.Rank(), c.Size(), sp.Part.ID, k)
	}
	if opts.Rebalance != nil {
		return train.Result{}, nil, errors.New("fullgraph: rebalancing re-partitions the whole graph, which a worker of stored parts does not hold")
	}
	if opts.Link != nil {
		c = comm.WithLink(c, *opts.Link)
	}
	mine := binary.LittleEndian.AppendUint64(nil, sp.Layout)
	send, recv := make([][]byte, k), make([][]byte, k)
	for p := range send {
		send[p] = mine
	}
	if err := c.AllToAll(partsSite, send, recv); err != nil {
		return train.Result{}, nil, fmt.Errorf("fullgraph: checking the stored parts: %w", err)
	}
	for p, b := range recv {
		if len(b) != 8 || binary.LittleEndian.Uint64(b) != sp.Layout {
			return train.Result{}, nil, fmt.Errorf("fullgraph: rank %d holds a part of a different partition than rank %d (layout fingerprints differ)", p, c.Rank())
		}
	}
	var ex *halo.Exchange
	var hx nn.Halo
	if k > 1 {
		var err error
		if ex, err = newExchange(c, &sp.Part, cfg, opts); err != nil {
			return train.Result{}, nil, err
		}
		hx = ex
	}
	if opts.Precision == train.BF16 && sp.Features.Dense != nil {
		// The part's float32 features go once rounded: sp holds the bf16
		// ones instead.
		sp.Features = nn.BF16Features(tensor.MatrixToBF16(sp.Features.Dense))
	}
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		return train.Result{}, nil, err
	}
	d, err := StoredData(sp, agg, hx)
	if err != nil {
		return train.Result{}, nil, err
	}
	return run(ctx, c, cfg, d, ex, opts, nil, onEpoch)
}
