package decentral

// Tests of the claims of Olshevskyi et al., "Fully Distributed Online
// Training of Graph Neural Networks in Networked Systems" (arXiv 2412.06105),
// in the spirit of etcd raft's raft_paper_test.go: each test names the claim
// it checks.

import (
	"math"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/internal/stats"
)

// "For a mini-batch with B samples, our approach of training an L-layer GNN
// only adds L rounds of message passing to the LB rounds required by GNN
// inference, with doubled message sizes." (abstract)
func TestPaperPiggybackAddsLRoundsToInference(t *testing.T) {
	for _, tt := range []struct {
		layers, hops, batch int
	}{{2, 1, 1}, {2, 1, 4}, {3, 1, 5}, {3, 2, 3}} {
		dims := make([]int, tt.layers+1)
		for i := range dims {
			dims[i] = 3
		}
		m := Model{Dims: dims, Hops: tt.hops, Hidden: Tanh}
		g := randomGraph(t, 20, 0.2, 7)
		s, _ := NormalizedLaplacian(g)
		rng := newRand(3, 3)
		params := m.Init(rng)
		batch := randomBatch(t, m, s, tt.batch, rng)

		measure := func(pig bool) (train, infer Stats) {
			net := mustNetwork(t, Config{Model: m, Graph: g, Params: params, Piggyback: pig, Optimizer: Optimizer{LR: 0.1}})
			var err error
			if _, infer, err = net.Predict(batch); err != nil {
				t.Fatal(err)
			}
			if train, err = net.Train(batch); err != nil {
				t.Fatal(err)
			}
			return train, infer
		}
		pig, infer := measure(true)
		plain, _ := measure(false)
		L, K, B := tt.layers, tt.hops, tt.batch
		if infer.Rounds != L*K*B {
			t.Errorf("L=%d K=%d B=%d: inference took %d rounds, want L·K·B = %d", L, K, B, infer.Rounds, L*K*B)
		}
		// K = 1 is the paper's setting: exactly L rounds beyond inference
		// (L−1 to finish the last sample's backward pass, one consensus).
		if want := infer.Rounds + L*K - K + 1; pig.Rounds != want {
			t.Errorf("L=%d K=%d B=%d: piggybacked mini-batch took %d rounds, want %d", L, K, B, pig.Rounds, want)
		}
		if want := B*(2*L-1)*K + 1; plain.Rounds != want {
			t.Errorf("L=%d K=%d B=%d: plain mini-batch took %d rounds, want B·(2L−1)·K + 1 = %d", L, K, B, plain.Rounds, want)
		}
		with, without, _ := RoundsFormula(m, B, false)
		if with != pig.Rounds || without != plain.Rounds {
			t.Errorf("RoundsFormula = %d, %d; measured %d, %d", with, without, pig.Rounds, plain.Rounds)
		}
		// Every round sends one message per directed edge, so messages
		// scale with rounds, while the payload is the same either way: the
		// piggybacked messages are the two halves sent together.
		edges := g.NumEdges()
		if pig.Messages != int64(pig.Rounds)*edges || plain.Messages != int64(plain.Rounds)*edges {
			t.Errorf("messages %d and %d, want rounds × %d edges", pig.Messages, plain.Messages, edges)
		}
		if pig.Bytes != plain.Bytes {
			t.Errorf("piggybacking changed the payload: %d bytes, plain %d", pig.Bytes, plain.Bytes)
		}
		if B > 1 && L > 1 {
			// Doubled message sizes: a round carrying both halves is about
			// twice the size of a forward-only one.
			perMsgPig := float64(pig.Bytes) / float64(pig.Messages)
			perMsgPlain := float64(plain.Bytes) / float64(plain.Messages)
			if perMsgPig <= perMsgPlain {
				t.Errorf("piggybacked messages average %.1f bytes, plain %.1f: want larger", perMsgPig, perMsgPlain)
			}
		}
	}
}

// "[Local] backward messages [...] piggyback [...] with reuse of intermediate
// values": piggybacking changes when messages travel, not what is computed,
// so the local gradients are bit-for-bit those of separate sweeps.
func TestPaperPiggybackComputesTheSameGradients(t *testing.T) {
	m := Model{Dims: []int{4, 5, 3, 2}, Hops: 2, Bias: true, Hidden: Sigmoid}
	g := randomGraph(t, 30, 0.15, 11)
	s, _ := NormalizedLaplacian(g)
	rng := newRand(5, 5)
	params := m.Init(rng)
	batch := randomBatch(t, m, s, 4, rng)
	var got [2][][]float64
	for k, pig := range []bool{false, true} {
		net := mustNetwork(t, Config{Model: m, Graph: g, Params: params, Piggyback: pig})
		var err error
		if got[k], _, err = net.Gradients(batch); err != nil {
			t.Fatal(err)
		}
	}
	for i := range got[0] {
		if !slices.Equal(got[0][i], got[1][i]) {
			t.Fatalf("agent %d: piggybacked gradient differs from the separate sweeps'", i)
		}
	}
}

// "Each node trains a local copy of the model while exchanging messages with
// neighbors" and consensus drives the copies together: with a connected
// graph and no gradient, repeated Metropolis–Hastings mixing reaches the
// average of the initial copies.
func TestPaperConsensusReachesAverage(t *testing.T) {
	g := randomGraph(t, 25, 0.3, 2)
	m := Model{Dims: []int{2, 1}, Hops: 1}
	// One training step gives every agent different parameters; steps on a
	// loss with zero gradient are then pure consensus.
	s, _ := NormalizedLaplacian(g)
	net2 := mustNetwork(t, Config{Model: m, Graph: g, Optimizer: Optimizer{Rule: SGD, LR: 0.5}})
	if _, err := net2.Train(randomBatch(t, m, s, 1, newRand(9, 9))); err != nil {
		t.Fatal(err)
	}
	ps, _ := net2.Params()
	avg := stats.ElementwiseMean(ps)
	for range 300 {
		if _, err := net2.Train(zeroLossBatch(m, s)); err != nil {
			t.Fatal(err)
		}
	}
	ps, _ = net2.Params()
	for i, p := range ps {
		if d := maxRelDiff(p, avg); d > 1e-9 {
			t.Fatalf("agent %d is %.3g from the average after 300 consensus rounds", i, d)
		}
	}
}

// zeroLossBatch is a sample whose loss has zero gradient, so a training step
// is pure consensus.
func zeroLossBatch(m Model, s *Shift) []Sample {
	n := s.Graph.N
	losses := make([]LocalLoss, n)
	for i := range losses {
		losses[i] = Linear{Coef: make([]float64, m.Dims[m.Layers()])}
	}
	return []Sample{{Shift: s, X: make([]float64, n*m.Dims[0]), Loss: losses}}
}

// "With exact consensus the distributed gradient equals the centralized
// gradient" (the reformulation as distributed optimisation, §III-A): the
// average of the agents' local gradients is the gradient a server holding
// the whole graph computes, to float rounding.
func TestPaperLocalGradientsSumToGlobal(t *testing.T) {
	for seed := range uint64(5) {
		g := randomGraph(t, 20+int(seed)*10, 0.1, seed)
		s, _ := NormalizedLaplacian(g)
		m := Model{Dims: []int{3, 4, 2}, Hops: 1 + int(seed%2), Hidden: Sigmoid, Output: Sigmoid}
		rng := newRand(seed, 1)
		params := m.Init(rng)
		batch := randomBatch(t, m, s, 2, rng)
		net := mustNetwork(t, Config{Model: m, Graph: g, Params: params, Piggyback: true})
		grads, _, err := net.Gradients(batch)
		if err != nil {
			t.Fatal(err)
		}
		_, want, _ := m.Gradient(params, batch)
		if d := maxRelDiff(stats.ElementwiseMean(grads), want); d > 1e-12 || math.IsNaN(d) {
			t.Errorf("seed %d: exact-consensus gradient is %.3g from the central one", seed, d)
		}
	}
}
