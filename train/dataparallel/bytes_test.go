package dataparallel

import (
	"context"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
)

// countingComm counts, independently of comm.Stats, the bytes handed to
// AllToAll per site.
type countingComm struct {
	comm.Communicator
	mu   *sync.Mutex
	sent map[string]int64
}

func (c countingComm) AllToAll(site string, send, recv [][]byte) error {
	var n int64
	for p, b := range send {
		if p != c.Rank() {
			n += int64(len(b))
		}
	}
	c.mu.Lock()
	c.sent[site] += n
	c.mu.Unlock()
	return c.Communicator.AllToAll(site, send, recv)
}

// "Report the bytes of structure, features and gradients separately": the
// reported bytes are the bytes that crossed the communicator at each site.
func TestReportedBytesEqualBytesSent(t *testing.T) {
	p := sbmProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 3))
	cfg := testConfig("sage")
	var mu sync.Mutex
	sent := map[string]int64{}
	var structure, features, grad int64
	err := withTimeout(t, func() error {
		return comm.Run(3, func(c comm.Communicator) error {
			cc := countingComm{Communicator: c, mu: &mu, sent: sent}
			_, _, err := RunWorker(context.Background(), cc, cfg, parts[c.Rank()], Options{Sampler: "neighbor:4,4", BatchSize: 10}, func(e metrics.Epoch) error {
				if c.Rank() == 0 {
					structure += e.BytesStructure
					features += e.BytesFeatures
					grad += e.BytesGrad
				}
				return nil
			})
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if structure == 0 || features == 0 || grad == 0 || structure != sent[StructureSite] || features != sent[FeatureSite] {
		t.Fatalf("reported %d structure, %d feature and %d gradient bytes; %d and %d crossed the communicator",
			structure, features, grad, sent[StructureSite], sent[FeatureSite])
	}
	if sent[EvalSite] == 0 {
		t.Fatal("evaluation fetched no rows")
	}
}
