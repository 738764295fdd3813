package sample

import (
	"slices"
	"testing"
)

// lossNodes returns the global ids of the nodes whose loss counts in every
// batch of epoch, in order.
func lossNodes(t *testing.T, s Sampler, epoch int) []int32 {
	t.Helper()
	var b Batch
	var out []int32
	for i := range s.Batches() {
		if err := s.Sample(epoch, i, &b); err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Loss {
			out = append(out, b.Output[r])
		}
	}
	return out
}

// Dealt shares: in every epoch the workers' batches together hold every
// training node once, each worker's a new share of them each epoch; one
// share is the whole order, the sampler without shares.
func TestSharesDealEachEpochsOrder(t *testing.T) {
	g, _, _ := testGraph(t, 300, 6)
	for _, spec := range []string{"neighbor:5,3", "fastgcn:40,40", "ladies:40,40"} {
		t.Run(spec, func(t *testing.T) {
			cfg := testConfig(g, Mean, 2, 7)
			whole, err := New(spec, cfg)
			if err != nil {
				t.Fatal(err)
			}
			one := cfg
			one.Shares = 1
			alone, err := New(spec, one)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := lossNodes(t, alone, 2), lossNodes(t, whole, 2); !slices.Equal(got, want) {
				t.Fatalf("one share: %v, want the sampler's own %v", got, want)
			}
			const workers = 3
			shares := make([]Sampler, workers)
			for w := range shares {
				c := cfg
				c.Share, c.Shares = w, workers
				if shares[w], err = New(spec, c); err != nil {
					t.Fatal(err)
				}
			}
			var first [workers][]int32
			for epoch := 1; epoch <= 2; epoch++ {
				var all []int32
				for w, s := range shares {
					mine := lossNodes(t, s, epoch)
					if want := (len(cfg.Train) - w + workers - 1) / workers; len(mine) != want {
						t.Fatalf("epoch %d, worker %d: %d seeds, want %d", epoch, w, len(mine), want)
					}
					if epoch == 1 {
						first[w] = slices.Sorted(slices.Values(mine))
					} else if slices.Equal(first[w], slices.Sorted(slices.Values(mine))) {
						t.Errorf("worker %d has the same seeds in epochs 1 and 2", w)
					}
					all = append(all, mine...)
				}
				slices.Sort(all)
				if !slices.Equal(all, cfg.Train) {
					t.Fatalf("epoch %d: the shares hold %d seeds, not the %d training nodes once each", epoch, len(all), len(cfg.Train))
				}
			}
		})
	}
}

// Layer-wise samplers key each layer's draws by the batch: a worker's
// batch i draws as batch i·Shares+Share of all the workers' batches
// together, so no two workers' batches draw alike.
func TestSharesDrawApart(t *testing.T) {
	g, _, _ := testGraph(t, 300, 6)
	cfg := testConfig(g, Mean, 2, 7)
	c := cfg
	c.Share, c.Shares = 1, 2
	shared, err := New("fastgcn:40,40", c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New("fastgcn:40,40", cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := s.(*FastGCN)
	var got, want, other Batch
	if err := shared.Sample(1, 2, &got); err != nil {
		t.Fatal(err)
	}
	seeds := slices.Clone(got.Output)
	if err := whole.SampleSeeds(1, 2*2+1, seeds, &want); err != nil {
		t.Fatal(err)
	}
	if err := whole.SampleSeeds(1, 2, seeds, &other); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Input, want.Input) {
		t.Error("batch 2 of share 1 of 2 did not draw as batch 5 of the whole")
	}
	if slices.Equal(got.Input, other.Input) {
		t.Error("batch 2 of share 1 of 2 drew as batch 2 of the whole, as share 0's batch 2 keys")
	}
}

// GraphSAINT's and Cluster-GCN's batches are not cut from an order of the
// seeds: a share is a fixed part of the training nodes, drawn with a seed
// of its own, the sampler made for that part alone.
func TestSharesFixedForSubgraphSamplers(t *testing.T) {
	g, _, _ := testGraph(t, 300, 6)
	cfg := testConfig(g, Mean, 2, 7)
	for _, spec := range []string{"saint-node:60", "cluster:8:2"} {
		c := cfg
		c.Share, c.Shares = 1, 3
		shared, err := New(spec, c)
		if err != nil {
			t.Fatal(err)
		}
		part := cfg
		part.Train, part.Seed = nil, cfg.Seed+1
		for i := 1; i < len(cfg.Train); i += 3 {
			part.Train = append(part.Train, cfg.Train[i])
		}
		alone, err := New(spec, part)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := lossNodes(t, shared, 1), lossNodes(t, alone, 1); !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s, share 1 of 3: loss nodes %v, want those of its part %v", spec, got, want)
		}
	}
}

func TestSharesRefused(t *testing.T) {
	g, _, _ := testGraph(t, 30, 4)
	cfg := testConfig(g, Mean, 2, 7) // 10 training nodes
	for _, tc := range []struct{ share, shares int }{{-1, 2}, {2, 2}, {0, 11}} {
		c := cfg
		c.Share, c.Shares = tc.share, tc.shares
		if _, err := New("neighbor:5,3", c); err == nil {
			t.Errorf("share %d of %d: accepted", tc.share, tc.shares)
		}
	}
}
