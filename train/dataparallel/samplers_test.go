package dataparallel

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/traintest"
)

// runOneProcess trains in one process on the whole graph with the
// minibatch stepper and the sampler spec.
func runOneProcess(t *testing.T, cfg train.Config, p train.Problem, spec string, batch, epochs int) trace {
	t.Helper()
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := sample.New(spec, sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: batch, Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed})
	if err != nil {
		t.Fatal(err)
	}
	s, err := minibatch.New(cfg, p, sm, minibatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loop, err := train.New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := steps(loop, sm.Batches(), max(cfg.Accumulate, 1), epochs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// "With one worker, each sampler over parts equals the single-process
// sampler's run": the worker's one part is the whole graph, its clusters
// the whole graph's, its subgraphs and their normalisation one process's.
func TestOneWorkerEqualsOneProcessForEverySampler(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 1))
	for _, spec := range []string{"cluster:6:2", "saint-rw:15:2", "saint-edge:30", "saint-node:60"} {
		for _, model := range []string{"gcn", "sage", "gat"} {
			t.Run(spec+"/"+model, func(t *testing.T) {
				cfg := testConfig(model)
				cfg.Accumulate = 2
				want := runOneProcess(t, cfg, p, spec, 16, 2)
				got := runParts(t, cfg, parts, spec, 16, 2)
				checkSame(t, spec+" "+model, got, want)
			})
		}
	}
}

// seen is one batch of one worker as its stepper sampled and gathered it.
type seen struct {
	input, output, loss []int32
	weight              []float32
	labels              []int32
	x                   []float32
	edges               [][2]int32 // per block entry off the diagonal: (destination, source), global ids
}

// observe samples every batch of epochs on every worker of parts, each
// through a communicator that counts the bytes it sends per site, and
// returns each worker's batches and the bytes sent per site.
func observe(t *testing.T, cfg train.Config, parts []*partstore.Part, spec string, batch, epochs int) ([][]seen, map[string]int64) {
	t.Helper()
	out := make([][]seen, len(parts))
	var mu sync.Mutex
	sent := map[string]int64{}
	err := withTimeout(t, func() error {
		return comm.Run(len(parts), func(c comm.Communicator) error {
			s, err := New(countingComm{Communicator: c, mu: &mu, sent: sent}, cfg, parts[c.Rank()], spec, batch)
			if err != nil {
				return err
			}
			for epoch := 1; epoch <= epochs; epoch++ {
				for index := range s.Batches() {
					labels, err := s.sampler.sample(epoch, index, &s.batch)
					if err != nil {
						return err
					}
					var x nn.Features
					if s.sampler.local() {
						x, err = s.batcher.gatherOwn(s.batch.Input)
					} else {
						x, err = s.batcher.gather(s.batch.Input)
					}
					if err != nil {
						return err
					}
					b := &s.batch
					o := seen{input: slices.Clone(b.Input), output: slices.Clone(b.Output), loss: slices.Clone(b.Loss),
						weight: slices.Clone(b.Weight), labels: slices.Clone(labels), x: denseData(x)}
					for _, blk := range b.Blocks {
						ops := blk.Operators()
						op := ops.Loops
						if ops.GCN != nil {
							op = ops.GCN
						} else if ops.Mean != nil {
							op = ops.Mean
						}
						for i := range op.Rows {
							for _, j := range op.Indices[op.Offsets[i]:op.Offsets[i+1]] {
								if v, u := blk.SrcIDs[i], blk.SrcIDs[j]; v != u {
									o.edges = append(o.edges, [2]int32{v, u})
								}
							}
						}
					}
					out[c.Rank()] = append(out[c.Rank()], o)
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, sent
}

// ownerOf returns each node's part.
func ownerOf(parts []*partstore.Part, n int) []int {
	owner := make([]int, n)
	for q, sp := range parts {
		for _, v := range sp.Part.Owned {
			owner[v] = q
		}
	}
	return owner
}

// within returns the nodes at most hops steps from the nodes of from.
func within(g *graph.Graph, from []int32, hops int) map[int32]bool {
	in := map[int32]bool{}
	frontier := slices.Clone(from)
	for _, v := range from {
		in[v] = true
	}
	for range hops {
		var next []int32
		for _, v := range frontier {
			for _, u := range g.Adj(int(v)) {
				if !in[u] {
					in[u] = true
					next = append(next, u)
				}
			}
		}
		frontier = next
	}
	return in
}

// "What must hold where the semantics cannot coincide with one process's":
// over 3 parts, every block entry is an edge of the graph; a worker's
// batches start from its own part (Cluster-GCN's and saint-node's never
// leave it, saint-edge's reach one edge out of it, saint-rw's walks start
// at its own training nodes); the loss rows are the batch's training
// nodes, each with its label, weighted (GraphSAINT) or not (Cluster-GCN);
// and a row a worker does not own reaches it through the Communicator
// only: its part holds its own nodes' rows and features alone, the batch's
// other features are the graph's, and the bytes that crossed the
// Communicator are there exactly when a batch reaches another part.
func TestSamplersOverPartsKeepToTheGraph(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 3))
	owner := ownerOf(parts, p.Graph.N)
	isTrain := map[int32]bool{}
	for _, v := range p.Train {
		isTrain[v] = true
	}
	edge := map[[2]int32]bool{}
	for v := range p.Graph.N {
		for _, u := range p.Graph.Adj(v) {
			edge[[2]int32{int32(v), u}] = true
		}
	}
	w := p.Features.Dense.Cols
	for _, sp := range parts {
		if sp.Features.Rows() != len(sp.Part.Owned) || sp.Part.Local.Rows != len(sp.Part.Owned) || len(sp.Labels) != len(sp.Part.Owned) {
			t.Fatalf("part %d holds %d feature rows, %d adjacency rows and %d labels for %d nodes", sp.Part.ID, sp.Features.Rows(), sp.Part.Local.Rows, len(sp.Labels), len(sp.Part.Owned))
		}
	}
	for _, tc := range []struct {
		spec   string
		reach  int // how far from the worker's own nodes a batch reaches; -1: 2 steps from its training nodes
		weight bool
		seeds  bool // the output rows are seeds, the worker's own training nodes
	}{{"cluster:8:3", 0, false, false}, {"saint-node:40", 0, true, false}, {"saint-edge:20", 1, true, false}, {"saint-rw:10:2", -1, true, false},
		{"neighbor:5,3", -1, false, true}, {"fastgcn:30,20", -1, false, true}, {"ladies:30,20", -1, false, true}} {
		for _, model := range []string{"gcn", "sage"} {
			cfg := testConfig(model)
			obs, sent := observe(t, cfg, parts, tc.spec, 16, 2)
			remote := false
			for r, batches := range obs {
				var own, ownTrain []int32
				for v := range p.Graph.N {
					if owner[v] == r {
						own = append(own, int32(v))
						if isTrain[int32(v)] {
							ownTrain = append(ownTrain, int32(v))
						}
					}
				}
				reach := within(p.Graph, own, max(tc.reach, 0))
				if tc.reach < 0 {
					reach = within(p.Graph, ownTrain, 2)
				}
				for i, b := range batches {
					what := fmt.Sprintf("%s %s: worker %d's batch %d", tc.spec, model, r, i)
					for _, e := range b.edges {
						if !edge[e] {
							t.Fatalf("%s: block entry %d ← %d is not an edge", what, e[0], e[1])
						}
					}
					for j, v := range b.input {
						if !reach[v] {
							t.Fatalf("%s: node %d is out of the worker's reach", what, v)
						}
						if owner[v] != r {
							remote = true
						}
						if !slices.Equal(b.x[j*w:(j+1)*w], p.Features.Dense.Row(int(v))) {
							t.Fatalf("%s: node %d's features are not the graph's", what, v)
						}
					}
					var wantLoss []int32
					for j, v := range b.output {
						if tc.seeds && (owner[v] != r || !isTrain[v]) {
							t.Fatalf("%s: seed %d is not a training node of the worker's", what, v)
						}
						if isTrain[v] {
							wantLoss = append(wantLoss, int32(j))
						}
					}
					if !slices.Equal(b.loss, wantLoss) || (b.weight != nil) != (tc.weight && len(b.loss) > 0) {
						t.Fatalf("%s: loss rows %v (weights %v), want the training nodes' %v", what, b.loss, b.weight, wantLoss)
					}
					for j, row := range b.loss {
						if b.labels[row] != p.Labels[b.output[row]] || (tc.weight && !(b.weight[j] > 0)) {
							t.Fatalf("%s: loss row %d has label %d, weight %v", what, row, b.labels[row], b.weight)
						}
					}
				}
			}
			crossed := sent[StructureSite] + sent[FeatureSite]
			if remote != (crossed > 0) || (tc.reach == 0) == remote {
				t.Fatalf("%s %s: batches reach other parts: %v, %d bytes of structure and features crossed", tc.spec, model, remote, crossed)
			}
		}
	}
}

// Over parts as in one process, fixed seeds give the same bits at any
// GOMAXPROCS, pre-sampling included.
func TestSamplersOverPartsSameAtAnyGOMAXPROCS(t *testing.T) {
	p := traintest.SBMProblem(t, 3000) // batches of hundreds of nodes, which the samplers split between threads
	parts := Parts(p, classes, randomLayout(t, p, 3))
	cfg := testConfig("gcn")
	for _, spec := range []string{"cluster:8:3", "saint-rw:100:2", "saint-edge:200", "saint-node:400", "fastgcn:300,200", "ladies:300,200:rownorm"} {
		at := func(procs int) trace {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			return runParts(t, cfg, parts, spec, 128, 2)
		}
		want := at(1)
		for _, procs := range []int{2, 7} {
			if got := at(procs); !slices.Equal(got.losses, want.losses) || !slices.Equal(got.params, want.params) {
				t.Fatalf("%s: GOMAXPROCS %d trains another model than GOMAXPROCS 1", spec, procs)
			}
		}
	}
}

// "Uneven work never hangs", for every sampler: with a worker of one
// training node and one of none the run finishes, every step's loss
// finite.
func TestSamplersOverUnevenPartsFinish(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := unevenParts(t, p)
	for _, spec := range []string{"cluster:8:3", "saint-rw:10:2", "saint-edge:20", "saint-node:40", "ladies:30,20"} {
		for _, model := range []string{"gcn", "gat"} {
			cfg := testConfig(model)
			cfg.Accumulate = 2
			tr := runParts(t, cfg, parts, spec, 12, 2)
			for i, l := range tr.losses {
				if math.IsNaN(l) || math.IsInf(l, 0) {
					t.Fatalf("%s %s: step %d's loss %v", spec, model, i, l)
				}
			}
		}
	}
}

// layerwiseUnion trains in one process on the union batches of the parts'
// workers, with FastGCN or LADIES sampling them.
func layerwiseUnion(t *testing.T, cfg train.Config, p train.Problem, parts []*partstore.Part, spec string, batch, epochs int) trace {
	t.Helper()
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := sample.New(spec, sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: batch, Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed})
	if err != nil {
		t.Fatal(err)
	}
	switch s := sm.(type) {
	case *sample.FastGCN:
		return runUnionOf(t, cfg, p, parts, s.SampleSeeds, batch, epochs)
	case *sample.LADIES:
		return runUnionOf(t, cfg, p, parts, s.SampleSeeds, batch, epochs)
	}
	t.Fatalf("%s is not layer-wise", spec)
	return trace{}
}

// FastGCN over parts draws every block's nodes for the workers' batches
// together: N workers with batch b equal one process on the union of
// their seeds, as the neighbour sampler does; with uneven parts too.
func TestFastGCNWorkersEqualOneProcessOnTheUnionBatch(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 3))
	for _, model := range []string{"gcn", "sage", "gat"} {
		cfg := testConfig(model)
		checkSame(t, "fastgcn "+model, runParts(t, cfg, parts, "fastgcn:30,20", 16, 3), layerwiseUnion(t, cfg, p, parts, "fastgcn:30,20", 16, 3))
	}
	uneven := unevenParts(t, p)
	cfg := testConfig("gcn")
	checkSame(t, "fastgcn uneven", runParts(t, cfg, uneven, "fastgcn:30,20", 12, 2), layerwiseUnion(t, cfg, p, uneven, "fastgcn:30,20", 12, 2))
}

// LADIES over parts draws a worker's blocks for its own seeds: with one
// worker it is one process's LADIES on the same seeds.
func TestLADIESOneWorkerEqualsOneProcess(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 1))
	for _, spec := range []string{"ladies:30,20", "ladies:30,20:rownorm"} {
		for _, model := range []string{"gcn", "sage", "gat"} {
			cfg := testConfig(model)
			checkSame(t, spec+" "+model, runParts(t, cfg, parts, spec, 16, 3), layerwiseUnion(t, cfg, p, parts, spec, 16, 3))
		}
	}
}

// denseData is the values of x's rows, dense.
func denseData(x nn.Features) []float32 {
	if x.Sparse != nil {
		return x.Sparse.Dense().Data
	}
	return slices.Clone(x.Dense.Data)
}

// SendsFeatures says of every sampler what its batches do: whether they
// fetch feature rows from other workers.
func TestSendsFeaturesAgreesWithTheSamplers(t *testing.T) {
	p := traintest.SBMProblem(t, 200)
	parts := Parts(p, classes, randomLayout(t, p, 2))
	for _, spec := range []string{"neighbor:3,3", "fastgcn:20,20", "ladies:20,20", "cluster:6:2", "saint-rw:15:2", "saint-edge:30", "saint-node:60"} {
		err := comm.Run(len(parts), func(c comm.Communicator) error {
			s, err := New(c, testConfig("gcn"), parts[c.Rank()], spec, 16)
			if err != nil {
				return err
			}
			if s.sampler.local() == SendsFeatures(spec) {
				return fmt.Errorf("%s: local %v, SendsFeatures %v", spec, s.sampler.local(), SendsFeatures(spec))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
