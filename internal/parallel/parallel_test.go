package parallel

import (
	"sync/atomic"
	"testing"
)

type countTask struct {
	hits []atomic.Int32
}

func (t *countTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		t.hits[i].Add(1)
	}
}

func TestForCoversEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100, 10007} {
		for _, grain := range []int{0, 1, 3, 64, 100000} {
			task := &countTask{hits: make([]atomic.Int32, n)}
			For(n, grain, task)
			for i := range task.hits {
				if got := task.hits[i].Load(); got != 1 {
					t.Fatalf("n=%d grain=%d: index %d ran %d times", n, grain, i, got)
				}
			}
		}
	}
}

type nestTask struct {
	inner *countTask
}

func (t *nestTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		For(len(t.inner.hits), 1, t.inner)
	}
}

func TestNestedCallsDoNotDeadlock(t *testing.T) {
	inner := &countTask{hits: make([]atomic.Int32, 50)}
	For(8, 1, &nestTask{inner: inner})
	for i := range inner.hits {
		if got := inner.hits[i].Load(); got != 8 {
			t.Fatalf("index %d ran %d times, want 8", i, got)
		}
	}
}

func TestForBounds(t *testing.T) {
	task := &countTask{hits: make([]atomic.Int32, 30)}
	ForBounds([]int{0, 1, 1, 29, 30}, task)
	for i := range task.hits {
		if got := task.hits[i].Load(); got != 1 {
			t.Fatalf("index %d ran %d times", i, got)
		}
	}
}

type nopTask struct{ sum atomic.Int64 }

func (t *nopTask) Run(lo, hi int) { t.sum.Add(int64(hi - lo)) }

func TestForAllocatesNothing(t *testing.T) {
	task := &nopTask{}
	For(1000, 1, task) // warm the pool
	allocs := testing.AllocsPerRun(100, func() { For(1000, 1, task) })
	if allocs != 0 {
		t.Fatalf("For allocated %.1f times per call", allocs)
	}
}
