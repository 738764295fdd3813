package nn

import (
	"math/rand/v2"
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
