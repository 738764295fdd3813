package fullgraph

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
)

// A layout with an empty part (gpmetis writes them) trains: the empty
// worker takes part in every collective and contributes nothing, so the
// run equals the one without it, bit for bit. It once deadlocked: a worker
// without halo nodes skipped the halo exchange its peers waited in.
func TestEmptyPartTrains(t *testing.T) {
	s := newSBMTask(t, 120, 3)
	p := s.problem()
	two := make([]int32, s.g.N)
	for v := range two {
		two[v] = int32(v % 2)
	}
	for _, model := range []string{"gcn", "sage", "gat"} {
		t.Run(model, func(t *testing.T) {
			cfg := equivalenceConfig(model, s.classes)
			cfg.Epochs = 3
			run := func(k int) ([]float64, [][]float32) {
				layout, err := partition.BuildLayout(s.g, two, k)
				if err != nil {
					t.Fatal(err)
				}
				var losses []float64
				var params [][]float32
				done := make(chan error, 1)
				go func() {
					_, tr, err := RunInProcess(context.Background(), cfg, p, layout, Options{}, func(m metrics.Epoch) error {
						losses = append(losses, m.Loss)
						return nil
					})
					if tr != nil {
						for _, q := range tr.Model().Params() {
							params = append(params, q.Value.Data)
						}
					}
					done <- err
				}()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("%d parts: %v", k, err)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("%d parts, the last one empty: no epoch ended within 30 s", k)
				}
				return losses, params
			}
			wantLoss, wantParams := run(2)
			gotLoss, gotParams := run(3)
			if !slices.Equal(gotLoss, wantLoss) {
				t.Fatalf("losses with an empty third part %v, without it %v", gotLoss, wantLoss)
			}
			for i := range wantParams {
				if !slices.Equal(gotParams[i], wantParams[i]) {
					t.Fatalf("parameter %d differs with an empty third part", i)
				}
			}
		})
	}
}
