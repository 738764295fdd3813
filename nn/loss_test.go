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
	if _, err := b.Loss(logits, labels, []int32{4, 9, 4}, 1); err == nil {
		t.Error("a row listed twice was accepted")
	}
	if got, err := b.Loss(logits, labels, rows, 2.5); err != nil || got != want {
		t.Errorf("after refusals: Loss %v (%v), Forward's loss %v", got, err, want)
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

// ForwardInPlace is Forward bit for bit, its gradient written over the
// logits, with no logits-sized buffer of its own; both refuse bad rows
// and leave the loss ready for the next call.
func TestCrossEntropyForwardInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n, c = 3000, 9
	logits := randomMatrix(n, c, rng)
	labels := make([]int32, n)
	var rows []int32
	for i := range labels {
		labels[i] = int32(rng.IntN(c))
		if i%3 != 1 {
			rows = append(rows, int32(i))
		}
	}
	var a, b CrossEntropy
	want, grad, err := a.Forward(logits, labels, rows, 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ForwardInPlace(logits, labels, []int32{3, 3}, 1); err == nil {
		t.Fatal("a row listed twice was accepted")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := b.ForwardInPlace(logits, labels, rows, 7)
	runtime.ReadMemStats(&after)
	if err != nil || got != want {
		t.Fatalf("in place: loss %v (%v), Forward's %v", got, err, want)
	}
	for i, v := range grad.Data {
		if logits.Data[i] != v {
			t.Fatalf("in place: gradient[%d] = %v, Forward's %v", i, logits.Data[i], v)
		}
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*n*c/2 {
		t.Errorf("in place: allocated %d bytes for logits of %d", grew, 4*n*c)
	}
}
