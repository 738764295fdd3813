package fullgraph

import (
	"context"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
)

// "Fixed seeds give identical results": the same partitioned run twice,
// with compression and an adaptive schedule, gives the same bits.
func TestPartitionedRunIsDeterministic(t *testing.T) {
	s := newSBMTask(t, 200, 8)
	cfg := equivalenceConfig("gcn", s.classes)
	cfg.Epochs = 12
	parts, err := partition.Random{}.Partition(s.g, 3, partition.Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(s.g, parts, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := s.problem()
	run := func() []float64 {
		var losses []float64
		_, _, err := RunInProcess(context.Background(), cfg, p, layout, compressed(t, "truncate", "adaptive:8:1:1:2", cfg.Epochs),
			func(m metrics.Epoch) error { losses = append(losses, m.Loss, m.Ratio); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return losses
	}
	want := run()
	for range 5 {
		got := run()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("run differs at %d: %v vs %v\n%v\n%v", i, got[i], want[i], got, want)
			}
		}
	}
}

// observed is a schedule that records what the trainer reports to it.
type observed struct {
	mu     sync.Mutex
	losses []float64
}

func (o *observed) Ratio(int) float64 { return 2 }
func (o *observed) String() string    { return "observed" }
func (o *observed) Observe(_ int, loss float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.losses = append(o.losses, loss)
}

// An adaptive schedule is fed the validation loss after every epoch (the
// uncompressed model's, which stops improving when compression limits it),
// not the training loss, which keeps falling at any ratio.
func TestAdaptiveScheduleWatchesTheValidationLoss(t *testing.T) {
	s := newSBMTask(t, 200, 8)
	cfg := equivalenceConfig("gcn", s.classes)
	cfg.Epochs = 6
	const k = 2
	parts, err := partition.Random{}.Partition(s.g, k, partition.Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(s.g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	sched := &observed{}
	var valLosses []float64
	_, _, err = RunInProcess(context.Background(), cfg, s.problem(), layout,
		Options{Codec: codec(t, "truncate"), Schedule: func() compress.Schedule { return sched }},
		func(m metrics.Epoch) error { valLosses = append(valLosses, m.ValLoss, m.Loss); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(sched.losses) != k*cfg.Epochs {
		t.Fatalf("%d observations, want %d (one per worker and epoch)", len(sched.losses), k*cfg.Epochs)
	}
	for i, got := range sched.losses {
		epoch := i / k // the workers observe in step
		if want, train := valLosses[2*epoch], valLosses[2*epoch+1]; got != want || got == train {
			t.Fatalf("observation %d (epoch %d) = %v; validation loss %v, training loss %v", i, epoch+1, got, want, train)
		}
	}
}
