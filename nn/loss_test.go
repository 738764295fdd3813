package nn

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// Loss is Forward's loss to the bit, with buffers of the loss rows' size,
// and refuses what Forward refuses.
func TestCrossEntropyLossIsForwardsLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, c = 50, 6
	logits := randomMatrix(n, c, rng)
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(c))
	}
	rows := []int32{3, 17, 4, 49, 0, 22}
	var a, b CrossEntropy
	want, _, err := a.Forward(logits, labels, rows, 2.5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Loss(logits, labels, rows, 2.5)
	if err != nil || got != want {
		t.Fatalf("Loss %v (%v), Forward's loss %v", got, err, want)
	}
	if b.logp.Rows != len(rows) {
		t.Errorf("Loss keeps %d rows of log-probabilities for %d loss rows", b.logp.Rows, len(rows))
	}
	if _, err := b.Loss(logits, labels, []int32{n}, 1); err == nil {
		t.Error("a row outside the logits was accepted")
	}
	labels[3] = c
	if _, err := b.Loss(logits, labels, rows, 1); err == nil {
		t.Error("a label outside the classes was accepted")
	}
}

// Forward's log-probabilities become its gradient in place: its first call
// allocates one buffer of the logits' size (about a tenth of a
// products-sized run's memory at 47 classes), not two.
func TestCrossEntropyForwardKeepsOneBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n, c = 20000, 47
	logits := randomMatrix(n, c, rng)
	labels := make([]int32, n)
	rows := make([]int32, 0, n/2)
	for i := range labels {
		labels[i] = int32(rng.IntN(c))
		if i%2 == 0 {
			rows = append(rows, int32(i))
		}
	}
	var ce CrossEntropy
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, _, err := ce.Forward(logits, labels, rows, 1); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	matrix := uint64(4 * n * c)
	if got := after.TotalAlloc - before.TotalAlloc; got > matrix*3/2 {
		t.Errorf("Forward allocated %d bytes for logits of %d bytes", got, matrix)
	}
}
