package job

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// DefaultRebalance is the threshold of a bare --rebalance: re-partition
// when the slowest worker's compute time exceeds the mean by 10%.
const DefaultRebalance = 1.10

// checkRebalance refuses --rebalance where it cannot work: it
// re-partitions the whole graph, with the --partition method, between the
// workers of a full-graph run, none of which may keep state tied to the
// rows it holds.
func (s *Spec) checkRebalance() error {
	if s.Rebalance == 0 {
		return nil
	}
	var err error
	switch {
	case !(s.Rebalance > 1):
		err = fmt.Errorf("--rebalance=%v: want a max/mean threshold above 1 (bare --rebalance is %.2f)", s.Rebalance, DefaultRebalance)
	case s.PartDir != "":
		err = fmt.Errorf("--rebalance re-partitions the whole graph, which no worker of --part-dir %s holds: train from the dataset with --parts N instead", s.PartDir)
	case s.Async != nil:
		err = errors.New("--rebalance is for full-graph training over --parts N, not for parameter-server training")
	case s.Sampler != "":
		err = errors.New("--rebalance is for full-graph training: with --sampler the workers train on sampled batches; drop one of the two")
	case max(s.Parts, s.Place.Size) < 2:
		err = errors.New("--rebalance re-partitions the graph between workers: add --parts N (2 or more)")
	case compress.KeepsState(s.Codec):
		err = fmt.Errorf("--rebalance with --compress %s: the codec keeps state per pair of workers, which a new partition does not carry", s.Codec)
	case s.Codec == compress.Auto || s.Codec == "" && (s.Schedule != "" || s.CompressLast):
		err = errors.New("--rebalance with --compress auto (what --schedule or --compress-last alone select): its delta codec keeps state per pair of workers, which a new partition does not carry; name another codec")
	case s.Partition != "metis" && !slices.Contains(partition.Methods(), s.Partition):
		err = fmt.Errorf("--rebalance re-partitions with the --partition method; the assignment file %s cannot be recomputed with node weights (give %s)", s.Partition, strings.Join(partition.Methods(), ", "))
	}
	if err != nil {
		return specError(err)
	}
	return nil
}

// rebalancing returns the run's Rebalance (nil without --rebalance), which
// collects the re-partitions for the summary and, on the leader, says each
// on the log as it is made and once the window after it is measured.
func (s *Spec) rebalancing(leader bool) (*fullgraph.Rebalance, error) {
	if s.Rebalance == 0 {
		return nil, nil
	}
	p, err := partition.New(s.Partition)
	if err != nil {
		return nil, specError(fmt.Errorf("--partition: %v", err))
	}
	s.rebalances = []fullgraph.Record{}
	report := func(r fullgraph.Record, restored bool) {
		i := slices.IndexFunc(s.rebalances, func(o fullgraph.Record) bool { return o.Epoch == r.Epoch })
		if i < 0 {
			s.rebalances = append(s.rebalances, r)
		} else {
			s.rebalances[i] = r
		}
		if !leader || restored {
			return
		}
		if i < 0 {
			fmt.Fprintf(s.Log, "graft train: %s\n", describeRebalance(r))
		} else if r.WindowAfter != nil {
			fmt.Fprintf(s.Log, "graft train: after the rebalance at epoch %d, compute imbalance %.2f over epochs %d-%d\n", r.Epoch, r.ImbalanceAfter, r.WindowAfter[0], r.WindowAfter[1])
		}
	}
	return &fullgraph.Rebalance{Threshold: s.Rebalance, Partitioner: p, Seed: s.PartitionSeed, Report: report, Measure: s.measure}, nil
}

// describeRebalance says what a re-partition found and did.
func describeRebalance(r fullgraph.Record) string {
	found := fmt.Sprintf("compute imbalance %.2f (max/mean) over epochs %d-%d", r.ImbalanceBefore, r.WindowBefore[0], r.WindowBefore[1])
	cost := fmt.Sprintf("fitted cost %.3g µs per node + %.3g µs per edge", 1e6*r.Cost.PerNode, 1e6*r.Cost.PerEdge)
	if r.NodesMoved == 0 {
		return fmt.Sprintf("%s; no partition weighted by the %s is predicted to do better: kept the partition", found, cost)
	}
	return fmt.Sprintf("rebalanced after epoch %d: %s; re-partitioned by the %s, predicted imbalance %.2f; %d nodes moved, parts of %s nodes",
		r.Epoch, found, cost, r.ImbalancePredicted, r.NodesMoved, joinInts(r.PartNodes))
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// partSizes returns the owned nodes of every worker at the end of the run:
// the last re-partition's, or the layout's.
func (s *Spec) partSizes(in *input) []int64 {
	var sizes []int64
	if n := len(s.rebalances); n > 0 && len(s.rebalances[n-1].PartNodes) == s.Parts {
		for _, x := range s.rebalances[n-1].PartNodes {
			sizes = append(sizes, int64(x))
		}
		return sizes
	}
	if in.layout != nil {
		for _, p := range in.layout.Parts {
			sizes = append(sizes, int64(len(p.Owned)))
		}
	}
	return sizes
}
