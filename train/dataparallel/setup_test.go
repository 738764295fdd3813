package dataparallel

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/comm/commtest"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/traintest"
)

// blockLayout splits p's graph into k parts of consecutive node ids.
func blockLayout(t *testing.T, p train.Problem, k int) *partition.Layout {
	t.Helper()
	parts := make([]int32, p.Graph.N)
	for v := range parts {
		parts[v] = int32(v * k / p.Graph.N)
	}
	layout, err := partition.BuildLayout(p.Graph, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	return layout
}

// skewedSparse is sparse features of n rows and cols columns whose first
// quarter of rows have dense entries of their columns in each row and the
// others sparse: parts of consecutive ids are far denser, or far sparser,
// than the whole.
func skewedSparse(n, cols, dense, sparse int) nn.Features {
	m := tensor.New(n, cols)
	for v := range n {
		k := sparse
		if v < n/4 {
			k = dense
		}
		for j := range k {
			m.Row(v)[(v+3*j)%cols] = 1 / float32(k)
		}
	}
	return nn.NewFeatures(m, nn.ForceSparse)
}

// setupOf is partSetup(sp, cfg, opts), checked.
func setupOf(t *testing.T, sp *partstore.Part, cfg train.Config, opts Options) Setup {
	t.Helper()
	s, err := partSetup(sp, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runSetups trains one epoch of parts, each rank with the options opts
// gives it, and returns every rank's agreed setup and error and rank 0's
// feature bytes.
func runSetups(t *testing.T, cfg train.Config, parts []*partstore.Part, opts func(rank int) Options) ([]Setup, []error, int64) {
	t.Helper()
	k := len(parts)
	setups, errs := make([]Setup, k), make([]error, k)
	var features int64
	cfg.Epochs = 1
	withTimeout(t, func() error {
		return comm.Run(k, func(c comm.Communicator) error {
			o := opts(c.Rank())
			o.OnSetup = func(s Setup) { setups[c.Rank()] = s }
			_, _, err := RunWorker(context.Background(), c, cfg, parts[c.Rank()], o, func(e metrics.Epoch) error {
				if c.Rank() == 0 {
					features += e.BytesFeatures
				}
				return nil
			})
			errs[c.Rank()] = err
			return err
		})
	})
	return setups, errs, features
}

// Whether sparse features travel as dense rows is decided from every
// part's entries and rows together, so the workers decide as one process
// holding the whole graph would, alike whether their parts were cut in
// memory or read from a part directory, even where each part on its own
// would decide the other way: dense-enough features (14% over the graph,
// 5% in two of the three parts) go as dense rows, the same feature bytes
// as dense features; sparse ones (6%, 12% in one part) go as their
// entries, fewer bytes.
func TestDenseRowsDecidedFromAllParts(t *testing.T) {
	const n, k, cols = 300, 3, 40
	p := traintest.SBM(t, n, cols, 4)
	layout := blockLayout(t, p, k)
	cfg := testConfig("sage")
	neighbor := func(int) Options { return Options{Sampler: "neighbor:4,4", BatchSize: 10} }
	_, _, denseBytes := runSetups(t, cfg, Parts(p, classes, layout), neighbor)
	for _, tc := range []struct {
		name          string
		dense, sparse int // entries a row in the first quarter, and the rest
		want          bool
	}{{"dense enough", 16, 2, true}, {"sparse", 6, 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			sp := p
			sp.Features = skewedSparse(n, cols, tc.dense, tc.sparse)
			x := sp.Features.Sparse
			if whole := x.Density() >= nn.SparseDensity; whole != tc.want {
				t.Fatalf("density %.3f over the graph", x.Density())
			}
			inMemory := Parts(sp, classes, layout)
			contrary := false
			for _, part := range inMemory {
				contrary = contrary || (part.Features.Sparse.Density() >= nn.SparseDensity) != tc.want
			}
			if !contrary {
				t.Fatal("every part on its own decides as the whole graph: the test shows nothing")
			}
			dir := t.TempDir()
			src := partstore.Source{Graph: sp.Graph, Features: sp.Features, Labels: sp.Labels, Classes: classes}
			src.Split.Train, src.Split.Val, src.Split.Test = sp.Train, sp.Val, sp.Test
			if err := partstore.Write(dir, partstore.Manifest{Dataset: "skewed"}, src, layout, nil); err != nil {
				t.Fatal(err)
			}
			stored := make([]*partstore.Part, k)
			for i := range stored {
				var err error
				if stored[i], err = partstore.ReadPart(dir, i); err != nil {
					t.Fatal(err)
				}
			}
			one := cfg
			one.Epochs = 1 // as runSetups trains
			want := Setup{Nodes: n, Features: "sparse", Cols: cols, Classes: classes, Precision: train.FP32, Settings: setupOf(t, inMemory[0], one, neighbor(0)).Settings,
				NonZeros: int64(x.NNZ()), Rows: n, DenseRows: tc.want}
			for name, parts := range map[string][]*partstore.Part{"in memory": inMemory, "part directory": stored} {
				setups, _, bytes := runSetups(t, cfg, parts, neighbor)
				for r, s := range setups {
					if s != want {
						t.Errorf("%s: rank %d agreed to %+v, want %+v", name, r, s, want)
					}
				}
				if (bytes == denseBytes) != tc.want || (!tc.want && bytes >= denseBytes) {
					t.Errorf("%s: %d feature bytes, dense features' %d", name, bytes, denseBytes)
				}
			}
		})
	}
}

// Workers whose parts or settings differ are refused, every one of them
// with an error naming the field and each rank's value, before
// anything is trained: parts of different feature widths or storage, of
// different graphs, and workers run with different classes, precision,
// model, batch size or feature compression.
func TestSetupMismatchRefused(t *testing.T) {
	const n, k = 300, 3
	p := traintest.SBMProblem(t, n)
	layout := randomLayout(t, p, k)
	cfg := testConfig("sage")
	wide := traintest.SBM(t, n, 20, 4)
	sparse := p
	sparse.Features = nn.NewFeatures(p.Features.Dense, nn.ForceSparse)
	for _, tc := range []struct {
		name  string
		other func() (*partstore.Part, train.Config, Options) // rank 1's
		want  string
	}{
		{"feature columns", func() (*partstore.Part, train.Config, Options) {
			return Parts(wide, classes, layout)[1], cfg, Options{}
		}, "feature columns (rank 0 10, rank 1 20, rank 2 10)"},
		{"feature storage", func() (*partstore.Part, train.Config, Options) {
			return Parts(sparse, classes, layout)[1], cfg, Options{}
		}, "feature storage (rank 0 dense, rank 1 sparse, rank 2 dense)"},
		{"graph nodes", func() (*partstore.Part, train.Config, Options) {
			sp := Parts(p, classes, layout)[1]
			sp.Nodes++
			return sp, cfg, Options{}
		}, "graph nodes (rank 0 300, rank 1 301, rank 2 300)"},
		{"classes", func() (*partstore.Part, train.Config, Options) {
			c := cfg
			c.Model.Classes++
			return Parts(p, classes, layout)[1], c, Options{}
		}, fmt.Sprintf("classes (rank 0 %d, rank 1 %d, rank 2 %d)", classes, classes+1, classes)},
		{"precision", func() (*partstore.Part, train.Config, Options) {
			return Parts(p, classes, layout)[1], cfg, Options{Precision: train.BF16}
		}, "precision (rank 0 fp32, rank 1 bf16, rank 2 fp32)"},
		{"model", func() (*partstore.Part, train.Config, Options) {
			c := cfg
			c.Model.Hidden++
			return Parts(p, classes, layout)[1], c, Options{}
		}, "model (rank 0 fingerprint "},
		{"batch size", func() (*partstore.Part, train.Config, Options) {
			return Parts(p, classes, layout)[1], cfg, Options{BatchSize: 11}
		}, "batch size (rank 0 10, rank 1 11, rank 2 10)"},
		{"feature compression", func() (*partstore.Part, train.Config, Options) {
			codec, err := compress.Factory("bf16")
			if err != nil {
				t.Fatal(err)
			}
			return Parts(p, classes, layout)[1], cfg, Options{Codec: codec}
		}, "feature-row compression (rank 0 fingerprint "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := Parts(p, classes, layout)
			other, otherCfg, otherOpts := tc.other()
			parts[1] = other
			errs := make([]error, k)
			withTimeout(t, func() error {
				return comm.Run(k, func(c comm.Communicator) error {
					wc, o := cfg, Options{}
					if c.Rank() == 1 {
						wc, o = otherCfg, otherOpts
					}
					o.Sampler = "neighbor:4,4"
					if o.BatchSize == 0 {
						o.BatchSize = 10
					}
					_, _, errs[c.Rank()] = RunWorker(context.Background(), c, wc, parts[c.Rank()], o, nil)
					return errs[c.Rank()]
				})
			})
			checkRefused(t, errs, tc.want)
		})
	}
}

// checkRefused fails unless every rank's error says want (its own, or the
// one of the rank that ended the group first, which the group's abort
// carries).
func checkRefused(t *testing.T, errs []error, want string) {
	t.Helper()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: %v; want every rank to say %q", r, err, want)
		}
	}
}

// versionComm sends its setup records as another version of the format,
// of size bytes.
type versionComm struct {
	comm.Communicator
	version int64
	size    int
}

func (c versionComm) AllToAll(site string, send, recv [][]byte) error {
	for q := range send {
		send[q] = binary.LittleEndian.AppendUint64(nil, uint64(c.version))
		send[q] = append(send[q], make([]byte, c.size-8)...)
	}
	return c.Communicator.AllToAll(site, send, recv)
}

// A setup record of a version this build does not read is refused on
// every rank, naming the rank that sent it: the previous version's (one
// fingerprint of all the settings, 72 bytes) and a later one.
func TestSetupRecordOfAnotherVersionRefused(t *testing.T) {
	for _, other := range []struct {
		version int64
		size    int
	}{{1, 72}, {setupVersion + 1, 8 * setupFields}} {
		errs := make([]error, 3)
		withTimeout(t, func() error {
			return comm.Run(3, func(c comm.Communicator) error {
				if c.Rank() == 1 {
					c = versionComm{c, other.version, other.size}
				}
				_, errs[c.Rank()] = agreeSetup(c, Setup{Features: "dense", Cols: 4, Rows: 1})
				return errs[c.Rank()]
			})
		})
		checkRefused(t, errs, fmt.Sprintf("rank 1 sent a setup record this build does not read (%d bytes, version %d; this build's version is %d, %d bytes): are all workers the same graft?",
			other.size, other.version, setupVersion, 8*setupFields))
	}
}

// Workers whose training settings differ in one group alone are refused,
// every one with the error naming the group, and each rank's value where
// it is a number (a fingerprint otherwise); settings that differ only in
// how they say the same (no accumulation or accumulation 1, evaluation
// every epoch as 0 or 1, the default metric as "" or acc) agree.
func TestSetupNamesTheSettingsThatDiffer(t *testing.T) {
	p := traintest.SBMProblem(t, 60)
	sp := Parts(p, classes, randomLayout(t, p, 1))[0]
	base := testConfig("sage")
	base.Epochs, base.Patience, base.EvalEvery, base.Accumulate = 10, 0, 0, 0
	baseOpts := Options{Sampler: "neighbor:4,4", BatchSize: 10}
	codecs := map[string]func() compress.Compressor{}
	for _, name := range []string{"bf16", "quant8"} {
		f, err := compress.Factory(name)
		if err != nil {
			t.Fatal(err)
		}
		codecs[name] = f
	}
	grad := func(spec string) func() (gradcomp.Method, error) {
		return func() (gradcomp.Method, error) { return gradcomp.New(spec, gradcomp.Options{}) }
	}
	fp := "(rank 0 fingerprint "
	var wants []string
	for _, tc := range []struct {
		name string
		both func(*train.Config, *Options) // the two ranks' settings from base, if set
		edit func(*train.Config, *Options) // rank 1's from them
		want string                        // "" when they agree
	}{
		{"model width", nil, func(c *train.Config, _ *Options) { c.Model.Hidden++ }, "model " + fp},
		{"model kind", nil, func(c *train.Config, _ *Options) { c.Model.Model = "gcn" }, "model " + fp},
		{"optimiser rule", nil, func(c *train.Config, _ *Options) { c.Optimizer.Algorithm = nn.SGD }, "optimiser (update rule, rates and learning-rate schedule) " + fp},
		{"learning rate", nil, func(c *train.Config, _ *Options) { c.Optimizer.LR = 0.02 }, "optimiser (update rule, rates and learning-rate schedule) " + fp},
		{"learning-rate schedule", nil, func(c *train.Config, _ *Options) { c.Optimizer.Schedule = nn.StepDecay{StepSize: 5, Gamma: 0.5} },
			"optimiser (update rule, rates and learning-rate schedule) " + fp},
		{"schedule's parameters", func(c *train.Config, _ *Options) { c.Optimizer.Schedule = nn.StepDecay{StepSize: 5, Gamma: 0.5} },
			func(c *train.Config, _ *Options) { c.Optimizer.Schedule = nn.StepDecay{StepSize: 6, Gamma: 0.5} }, "optimiser (update rule, rates and learning-rate schedule) " + fp},
		{"weight decay", nil, func(c *train.Config, _ *Options) { c.WeightDecay = 1e-3 }, "weight decay (rank 0 0.0005, rank 1 0.001)"},
		{"decay of the first layer only", nil, func(c *train.Config, _ *Options) { c.DecayFirstLayerOnly = true },
			"weight decay of the first layer only (rank 0 false, rank 1 true)"},
		{"epochs", nil, func(c *train.Config, _ *Options) { c.Epochs = 20 }, "epochs (rank 0 10, rank 1 20)"},
		{"steps", nil, func(c *train.Config, _ *Options) { c.Steps = 50 }, "optimiser steps (rank 0 0, rank 1 50)"},
		{"patience", nil, func(c *train.Config, _ *Options) { c.Patience = 5 }, "patience (rank 0 0, rank 1 5)"},
		{"selection by loss", nil, func(c *train.Config, _ *Options) { c.SelectByLoss = true }, "model selection (by validation loss, or by which metric) " + fp},
		{"selection metric", nil, func(c *train.Config, _ *Options) { c.Metric = train.MacroF1 }, "model selection (by validation loss, or by which metric) " + fp},
		{"evaluation interval", nil, func(c *train.Config, _ *Options) { c.EvalEvery = 5 }, "evaluation interval (epochs) (rank 0 1, rank 1 5)"},
		{"accumulation", nil, func(c *train.Config, _ *Options) { c.Accumulate = 4 }, "gradient accumulation (micro-batches a step) (rank 0 1, rank 1 4)"},
		{"sampler", nil, func(_ *train.Config, o *Options) { o.Sampler = "neighbor:5,5" }, "sampler " + fp},
		{"batch size", nil, func(_ *train.Config, o *Options) { o.BatchSize = 12 }, "batch size (rank 0 10, rank 1 12)"},
		{"feature-row compression", nil, func(_ *train.Config, o *Options) { o.Codec = codecs["bf16"] }, "feature-row compression " + fp},
		{"feature-row codecs", func(_ *train.Config, o *Options) { o.Codec = codecs["bf16"] },
			func(_ *train.Config, o *Options) { o.Codec = codecs["quant8"] }, "feature-row compression " + fp},
		{"gradient compression", nil, func(_ *train.Config, o *Options) { o.Grad = grad("topk:0.1") }, "gradient compression " + fp},
		{"gradient compressions", func(_ *train.Config, o *Options) { o.Grad = grad("topk:0.1") },
			func(_ *train.Config, o *Options) { o.Grad = grad("topk:0.2") }, "gradient compression " + fp},
		{"accumulation 0 and 1", nil, func(c *train.Config, _ *Options) { c.Accumulate = 1 }, ""},
		{"evaluation every 0 and 1 epochs", nil, func(c *train.Config, _ *Options) { c.EvalEvery = 1 }, ""},
		{"metric unset and accuracy", nil, func(c *train.Config, _ *Options) { c.Metric = train.Accuracy }, ""},
	} {
		wants = append(wants, tc.want)
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, 2)
			withTimeout(t, func() error {
				return comm.Run(2, func(c comm.Communicator) error {
					cfg, opts := base, baseOpts
					if tc.both != nil {
						tc.both(&cfg, &opts)
					}
					if c.Rank() == 1 {
						tc.edit(&cfg, &opts)
					}
					_, errs[c.Rank()] = agreeSetup(c, setupOf(t, sp, cfg, opts))
					return errs[c.Rank()]
				})
			})
			if tc.want == "" {
				for r, err := range errs {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}
				return
			}
			checkRefused(t, errs, "the workers' parts or settings differ in "+tc.want)
		})
	}
	for _, g := range settingGroups {
		if !slices.ContainsFunc(wants, func(w string) bool { return strings.HasPrefix(w, g.name+" (") }) {
			t.Errorf("no case differs in %s alone", g.name)
		}
	}
}

// Over TCP, where each rank is its own communicator, a mismatch ends every
// rank with the error, promptly: no rank waits on the others.
func TestSetupMismatchOverTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("forms a TCP mesh")
	}
	const k = 2
	p := traintest.SBMProblem(t, 200)
	wide := traintest.SBM(t, 200, 20, 4)
	layout := randomLayout(t, p, k)
	parts := []*partstore.Part{Parts(p, classes, layout)[0], Parts(wide, classes, layout)[1]}
	var errs []error
	withTimeout(t, func() error {
		errs = commtest.TCP(t, k, "setup test", func(c comm.Communicator) error {
			_, _, err := RunWorker(context.Background(), c, testConfig("sage"), parts[c.Rank()], Options{Sampler: "neighbor:4,4", BatchSize: 10}, nil)
			return err
		})
		return nil
	})
	checkRefused(t, errs, "feature columns (rank 0 10, rank 1 20)")
}
