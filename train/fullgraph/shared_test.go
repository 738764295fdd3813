package fullgraph

import (
	"context"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
)

// shareSpy is a worker's in-process communicator that adds up, for the
// whole group, what its shared buffers (comm.Direct's Share) grew by and
// what giving them back (Unshare) freed.
type shareSpy struct {
	comm.Communicator
	comm.Direct
	acct *shareAccount
}

type shareAccount struct {
	mu          sync.Mutex
	grew, freed int
}

func (s shareSpy) Share(site string, h comm.Holder, size int) ([]byte, int, error) {
	b, grew, err := s.Direct.Share(site, h, size)
	s.acct.mu.Lock()
	s.acct.grew += grew
	s.acct.mu.Unlock()
	return b, grew, err
}

func (s shareSpy) Unshare(site string, h comm.Holder) int {
	freed := s.Direct.Unshare(site, h)
	s.acct.mu.Lock()
	s.acct.freed += freed
	s.acct.mu.Unlock()
	return freed
}

// runSpied is RunInProcess with every worker's communicator a shareSpy;
// it returns the group's account and the re-partitions made.
func runSpied(t *testing.T, cfg train.Config, p train.Problem, layout *partition.Layout, rebalance bool) (*shareAccount, int) {
	t.Helper()
	acct := &shareAccount{}
	var mu sync.Mutex
	records := map[int]bool{}
	err := comm.Run(layout.K, func(c comm.Communicator) error {
		d, ok := comm.DirectOf(c)
		if !ok {
			t.Fatal("the in-process group is not Direct")
		}
		var opts Options
		if rebalance {
			opts.Rebalance = &Rebalance{Threshold: 1.05, Partitioner: partition.Multilevel{}, Seed: 3, Window: 2, Measure: edgeTimes,
				Report: func(r Record, _ bool) { mu.Lock(); records[r.Epoch] = true; mu.Unlock() }}
		}
		_, _, err := RunWorker(context.Background(), shareSpy{c, d, acct}, cfg, p, layout, opts, func(metrics.Epoch) error { return nil })
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return acct, len(records)
}

// The workers of one process give their group's shared buffers back when
// their runs end, the exchange that a re-partition replaced included (its
// rows leave the memory account, package memacct, with them), and the
// re-partition's exchanges take the buffers over instead of the group
// allocating them again: a rebalanced run grows them by what a run that is
// not grows them by, and frees all of it.
func TestWorkersGiveBackAndReuseSharedBuffers(t *testing.T) {
	s := newSBMTask(t, 240, 5)
	const k = 4
	layout := skewedLayout(t, s, k)
	cfg := equivalenceConfig("gcn", s.classes)
	cfg.Epochs = 6
	plain, _ := runSpied(t, cfg, s.problem(), layout, false)
	if plain.grew == 0 || plain.freed != plain.grew {
		t.Errorf("a run without re-partitions grew the shared buffers by %d bytes and freed %d, want all of it and more than 0", plain.grew, plain.freed)
	}
	got, rebalances := runSpied(t, cfg, s.problem(), layout, true)
	if rebalances == 0 {
		t.Fatal("the skewed partition was not rebalanced")
	}
	if got.grew != plain.grew {
		t.Errorf("a run re-partitioned %d time(s) grew the shared buffers by %d bytes, the run that was not by %d: the new exchanges did not reuse them", rebalances, got.grew, plain.grew)
	}
	if got.freed != got.grew {
		t.Errorf("a run re-partitioned %d time(s) grew the shared buffers by %d bytes and freed %d", rebalances, got.grew, got.freed)
	}
}
