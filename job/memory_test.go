package job

import (
	"context"
	"io"
	"testing"

	"github.com/graft-gnn/graft/nn"
)

// The memory account sizes what the run held: the dense features of an
// sbm:2000:…:16 graph are 2000×16 float32s, once when two parts in one
// process have copied their rows and let the whole matrix go, twice over
// when they keep it to rebalance; Adam keeps two moments beside each
// parameter's value, gradient and best copy; a partitioned run has its
// parts' adjacencies, and in one process no halo buffers beyond a 64 KiB
// piece of gradient rows a part and where each node's row is in the
// buffer the parts share (the exchange reads the peers' rows where they
// lie); a mini-batch run's layers store
// activations; and the parts never add up to more than the peak RSS they
// are carved from.
func TestMemoryAccount(t *testing.T) {
	run := func(parts, hidden int, sampler string, layout ...nn.Storage) Summary {
		t.Helper()
		s := coraSpec(t)
		s.Dataset, s.Split, s.Features, s.Log = "sbm:2000:10:16:4:7", "", nn.ForceDense, io.Discard
		if len(layout) > 0 {
			s.Features = layout[0]
		}
		s.Parts, s.Train.Model.Hidden, s.Train.Epochs, s.Sampler, s.BatchSize = parts, hidden, 2, sampler, 64
		sum, err := Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Memory == nil {
			t.Fatal("no memory account")
		}
		return sum
	}
	const features = 2000 * 16 * 4
	narrow, parted := run(1, 16, ""), run(2, 16, "")
	s := coraSpec(t)
	s.Dataset, s.Split, s.Features, s.Log = "sbm:2000:10:16:4:7", "", nn.ForceDense, io.Discard
	s.Parts, s.Train.Epochs, s.Rebalance = 2, 2, 1e9
	rebalancing, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sum  Summary
		want int64
	}{{"one worker", narrow, features}, {"two parts in one process", parted, features}, {"two rebalancing parts", rebalancing, 2 * features}} {
		m := c.sum.Memory
		if m.Features != c.want {
			t.Errorf("%s: features %d bytes, want %d", c.name, m.Features, c.want)
		}
		if want := int64(c.sum.Parameters) * 4 * 5 * int64(c.sum.Parts); m.Parameters != want {
			t.Errorf("%s: parameters %d bytes for %d parameters in %d replicas, want %d", c.name, m.Parameters, c.sum.Parameters, c.sum.Parts, want)
		}
		if total := m.Graph + m.Features + m.Parameters + m.Activations + m.Communication + m.Rest; total != c.sum.PeakRSSBytes {
			t.Errorf("%s: the account sums to %d, peak RSS %d (%+v)", c.name, total, c.sum.PeakRSSBytes, *m)
		}
	}
	// One worker's GCN on the whole graph: its adjacency, the self-loop
	// pattern it builds and GCN's values over it (the graph is symmetric:
	// the backward pass reuses the operator as its transpose).
	one := coraSpec(t)
	one.Dataset, one.Split, one.Features, one.Log = "sbm:2000:10:16:4:7", "", nn.ForceDense, io.Discard
	in, err := one.loadInput()
	if err != nil {
		t.Fatal(err)
	}
	g := in.problem.Graph
	n, e, l := int64(g.N), int64(len(g.Neighbors)), int64(len(g.WithSelfLoops().Neighbors))
	if want := 8*(n+1) + 4*e + 8*(n+1) + 4*l + 4*l; narrow.Memory.Graph != want {
		t.Errorf("one worker: graph %d bytes, want %d (the adjacency, %d, and GCN's operator, %d)", narrow.Memory.Graph, want, 8*(n+1)+4*e, 8*(n+1)+8*l)
	}
	if rebalancing.Memory.Graph <= parted.Memory.Graph || parted.Memory.Graph <= 0 || parted.Memory.Communication > 2*64<<10+4*2000+2*8 {
		t.Errorf("two parts: graph %d (rebalancing, the whole graph kept too, %d), communication %d; want the parts' adjacencies alone counted, and no halo buffers beyond a piece",
			parted.Memory.Graph, rebalancing.Memory.Graph, parted.Memory.Communication)
	}
	// Data-parallel workers hold sparse features this dense (every value
	// stored) as dense rows: the parts' sparse copies and their dense
	// rows; the input's sparse matrix is let go once the parts are cut.
	// The two parts' sparse rows are the input's, with one more row
	// offset (8 bytes): each part's rows start at offset 0.
	sparse := run(1, 16, "", nn.ForceSparse).Memory.Features
	if dp := run(2, 16, "neighbor:5,5", nn.ForceSparse).Memory.Features; dp != sparse+8+features {
		t.Errorf("two data-parallel parts of dense-enough sparse features: %d bytes, want %d (the parts' sparse copies, %d+8, and the dense rows, %d)", dp, sparse+8+features, sparse, features)
	}
	// A mini-batch run at bf16 holds its features in bf16 only.
	s = coraSpec(t)
	s.Dataset, s.Split, s.Features, s.Log, s.Precision = "sbm:2000:10:16:4:7", "", nn.ForceDense, io.Discard, "bf16"
	s.Train.Epochs, s.Sampler, s.BatchSize = 1, "neighbor:5,5", 64
	if sum, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	} else if sum.Memory.Features != features/2 {
		t.Errorf("a bf16 mini-batch run: features %d bytes, want %d", sum.Memory.Features, features/2)
	}
	if sampled := run(1, 64, "neighbor:5,5"); sampled.Memory.Activations <= 0 {
		t.Errorf("mini-batch run: activations %d bytes", sampled.Memory.Activations)
	}
	// Delta coding's reconstructions are communication memory: each of
	// the parts' halo rows is reconstructed at both ends of a forward and
	// a backward stream, 64 float32s a row in the layer whose exchange is
	// as wide as the hidden layer; at bf16 precision they are bfloat16s,
	// 2 bytes a value.
	spec := func(codec, precision string) Spec {
		s := coraSpec(t)
		s.Dataset, s.Split, s.Features, s.Log = "sbm:2000:10:16:4:7", "", nn.ForceDense, io.Discard
		s.Parts, s.Train.Model.Hidden, s.Train.Epochs, s.Codec, s.CompressLast = 2, 64, 2, codec, true
		s.Precision = precision
		return s
	}
	none := spec("none", "")
	in, err = none.loadInput()
	if err != nil {
		t.Fatal(err)
	}
	var halo int64
	for _, p := range in.layout.Parts {
		halo += int64(len(p.Halo))
	}
	var comm [2][2]int64 // [fp32, bf16][none, delta:2]
	for i, precision := range []string{"", "bf16"} {
		for j, codec := range []string{"none", "delta:2"} {
			sum, err := Run(context.Background(), spec(codec, precision))
			if err != nil {
				t.Fatal(err)
			}
			comm[i][j] = sum.Memory.Communication
		}
	}
	if want := 4 * halo * 64 * 4; comm[0][1]-comm[0][0] < want {
		t.Errorf("communication %d bytes with delta coding, %d without; want at least %d more for the reconstructions of %d halo rows", comm[0][1], comm[0][0], want, halo)
	}
	// At bf16 the reconstructions are at least half as big, and delta
	// coding's whole communication memory holds them. (It need not add
	// them over none's: delta coding's pieces need no buffer of a peer's
	// rows, where none's backward passes hold float32 ones, twice as wide
	// as its bf16 forward ones.)
	fp32, bf16 := comm[0][1]-comm[0][0], comm[1][1]-comm[1][0]
	if want := 4 * halo * 64 * 2; comm[1][1] < want || fp32-bf16 < want {
		t.Errorf("delta coding's communication memory is %d bytes at bf16 (%d over none's), %d at fp32 (%d over); want at least %d, and at least %d fewer, for the bfloat16 reconstructions of %d halo rows", comm[1][1], bf16, comm[0][1], fp32, want, want, halo)
	}
	t.Logf("delta coding's communication memory: %d bytes at fp32, %d at bf16 (%d halo rows); none's %d and %d", fp32, bf16, halo, comm[0][0], comm[1][0])
}
