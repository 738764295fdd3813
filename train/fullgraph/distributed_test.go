package fullgraph

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
)

// countingComm counts, independently of comm.Stats, the bytes handed to
// AllToAll under the training halo sites.
type countingComm struct {
	comm.Communicator
	mu       *sync.Mutex
	fwd, bwd *int64
}

func (c countingComm) AllToAll(site string, send, recv [][]byte) error {
	var n int64
	for p, b := range send {
		if p != c.Rank() {
			n += int64(len(b))
		}
	}
	c.mu.Lock()
	switch {
	case strings.HasPrefix(site, "halo.fwd."):
		*c.fwd += n
	case strings.HasPrefix(site, "halo.bwd."):
		*c.bwd += n
	}
	c.mu.Unlock()
	return c.Communicator.AllToAll(site, send, recv)
}

// "Byte counters equal the bytes that crossed the communicator."
func TestReportedBytesEqualBytesSent(t *testing.T) {
	s := newSBMTask(t, 200, 4)
	const k = 3
	parts, err := partition.Random{}.Partition(s.g, k, partition.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(s.g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	cfg := equivalenceConfig("sage", s.classes)
	var mu sync.Mutex
	var fwd, bwd int64
	var reportedFwd, reportedBwd int64
	var ratios []float64
	err = comm.Run(k, func(c comm.Communicator) error {
		cc := countingComm{Communicator: c, mu: &mu, fwd: &fwd, bwd: &bwd}
		_, _, err := RunWorker(context.Background(), cc, cfg, s.problem(), layout,
			compressed(t, "truncate", "linear:16:1:2", cfg.Epochs), func(m metrics.Epoch) error {
				if c.Rank() == 0 {
					reportedFwd += m.BytesFwd
					reportedBwd += m.BytesBwd
					ratios = append(ratios, m.Ratio)
				}
				return nil
			})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if fwd == 0 || bwd == 0 || reportedFwd != fwd || reportedBwd != bwd {
		t.Fatalf("reported %d forward and %d backward bytes; %d and %d crossed the communicator", reportedFwd, reportedBwd, fwd, bwd)
	}
	if ratios[0] != 16 || ratios[len(ratios)-1] >= ratios[0] {
		t.Fatalf("ratios in force %v, want a decay from 16", ratios)
	}
}
