package fullgraph

import (
	"context"
	"testing"

	"github.com/graft-gnn/graft/compress"
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
	p := Problem{s.g, s.x, s.labels, s.train, s.val, s.test}
	run := func() []float64 {
		sched, _ := compress.ParseSchedule("adaptive:8:1:1:2", cfg.Epochs)
		var losses []float64
		_, _, err := RunInProcess(context.Background(), cfg, p, layout, DistOptions{Codec: "truncate", Schedule: sched},
			func(m DistMetrics) error { losses = append(losses, m.Loss, m.Ratio); return nil })
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
