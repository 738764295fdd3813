package dataparallel

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/train"
)

// Setup is what the workers of a run agree on before anything else: the
// figures every worker must hold alike for the run to mean anything, and
// the dense-rows decision, which each worker reaches from what all of them
// tell (RunWorker calls agreeSetup).
type Setup struct {
	Nodes     int    // of the whole graph
	Features  string // how the parts hold their features: dense, bf16, sparse (none: no features)
	Cols      int    // feature columns
	Classes   int
	Precision train.Precision
	// Settings fingerprints the training settings (settingsFingerprint).
	Settings uint64
	// NonZeros and Rows are the features' entries (sparse features) and
	// rows summed over the parts: the whole graph's.
	NonZeros, Rows int64
	// DenseRows: sparse features nn.SparseDensity dense and up over the
	// whole graph are held, sent and multiplied as dense rows, where the
	// dense product is the faster one.
	DenseRows bool
}

// The setup record a worker sends every other at SetupSite: setupFields
// little-endian int64s, in this order —
//
//	version   setupVersion
//	nodes     of the whole graph
//	storage   0 none, 1 dense, 2 bf16, 3 sparse
//	columns   feature columns
//	classes
//	precision 0 fp32, 1 bf16
//	settings  the training settings' fingerprint
//	nonzeros  the part's feature entries (sparse features; else 0)
//	rows      the part's feature rows
//
// The fields from nodes to settings must be equal on every worker; the
// last two are summed.
const (
	setupVersion = 1
	setupFields  = 9
	nAgreed      = 7 // version to settings
	// Fields shown or summed otherwise than as numbers.
	fieldStorage   = 2
	fieldPrecision = 5
	fieldSettings  = 6
	fieldNNZ       = 7
	fieldRows      = 8
)

var (
	storageNames   = []string{"none", "dense", "bf16", "sparse"}
	precisionNames = []train.Precision{train.FP32, train.BF16}
	agreedNames    = [nAgreed]string{"setup record version", "graph nodes", "feature storage", "feature columns", "classes", "precision",
		"training settings (the model, optimiser, stopping rules, accumulation, sampler, batch size and compression, or graft builds that differ)"}
)

// settingsFingerprint is FNV-64a of the settings every worker must train
// with alike: the model, the optimiser's rule and rates, the weight decay,
// when to stop and what model to keep, the accumulation, the sampler, the
// batch size, and the feature rows' and gradients' compression. (The
// learning-rate schedule counts by its type.)
func settingsFingerprint(cfg train.Config, opts Options) (uint64, error) {
	o := cfg.Optimizer
	h := fnv.New64a()
	fmt.Fprintf(h, "%+v|%s %v %v %v %v %v %v %T %v|%v %v|%d %d %d %v %s %d %d|%s %d",
		cfg.Model.WithDefaults(), o.Algorithm, o.LR, o.Momentum, o.Nesterov, o.Beta1, o.Beta2, o.Eps, o.Schedule, o.CatchUp,
		cfg.WeightDecay, cfg.DecayFirstLayerOnly, cfg.Epochs, cfg.Steps, cfg.Patience, cfg.SelectByLoss, cfg.Metric, cfg.EvalEvery, max(cfg.Accumulate, 1),
		opts.Sampler, opts.BatchSize)
	// The compressors' names: made here for them alone.
	if opts.Codec != nil {
		fmt.Fprintf(h, "|codec %s", opts.Codec().Name())
		if opts.Schedule != nil {
			fmt.Fprintf(h, " %s", opts.Schedule().String())
		}
	}
	if opts.Grad != nil {
		m, err := opts.Grad()
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(h, "|grad %s", m.String())
	}
	return h.Sum64(), nil
}

// partSetup is sp's figures, with the settings those the worker runs
// with.
func partSetup(sp *partstore.Part, cfg train.Config, opts Options) (Setup, error) {
	settings, err := settingsFingerprint(cfg, opts)
	if err != nil {
		return Setup{}, err
	}
	s := Setup{Nodes: sp.Nodes, Features: "none", Classes: cfg.Model.Classes, Precision: train.FP32, Settings: settings}
	if opts.Precision == train.BF16 {
		s.Precision = train.BF16
	}
	switch x := sp.Features; {
	case x.Sparse != nil:
		s.Features, s.NonZeros = "sparse", int64(x.Sparse.NNZ())
	case x.BF16 != nil:
		s.Features = "bf16"
	case x.Dense != nil:
		s.Features = "dense"
	default:
		return s, nil
	}
	s.Cols, s.Rows = sp.Features.Cols(), int64(sp.Features.Rows())
	return s, nil
}

func (s Setup) record() []byte {
	v := [setupFields]int64{setupVersion, int64(s.Nodes), int64(indexOf(storageNames, s.Features)), int64(s.Cols), int64(s.Classes),
		int64(indexOf(precisionNames, s.Precision)), int64(s.Settings), s.NonZeros, s.Rows}
	b := make([]byte, 0, 8*setupFields)
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

func indexOf[T comparable](names []T, x T) int {
	for i, n := range names {
		if n == x {
			return i
		}
	}
	return -1
}

// agreeSetup tells every other worker mine and returns the run's setup:
// mine with the parts' entries and rows summed and the dense-rows decision
// made from them. Every worker reads every record, so all reach the same
// setup, or the same error naming the first field that differs and each
// worker's value of it.
func agreeSetup(c comm.Communicator, mine Setup) (Setup, error) {
	send, recv := make([][]byte, c.Size()), make([][]byte, c.Size())
	for q := range send {
		send[q] = mine.record()
	}
	if err := c.AllToAll(SetupSite, send, recv); err != nil {
		return Setup{}, fmt.Errorf("dataparallel: exchanging the workers' setups: %w", err)
	}
	recs := make([][setupFields]int64, len(recv))
	for q, b := range recv {
		if len(b) < 8 || int64(binary.LittleEndian.Uint64(b)) != setupVersion {
			return Setup{}, fmt.Errorf("dataparallel: rank %d sent a setup record this build does not read (%d bytes%s; this build's version is %d, %d bytes): are all workers the same graft?",
				q, len(b), versionOf(b), setupVersion, 8*setupFields)
		}
		if len(b) != 8*setupFields {
			return Setup{}, fmt.Errorf("dataparallel: rank %d sent a setup record of %d bytes; version %d has %d", q, len(b), setupVersion, 8*setupFields)
		}
		for i := range recs[q] {
			recs[q][i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	// Precision first: at bf16 dense features are held in bf16, so a
	// precision that differs shows in the storage too.
	for _, f := range []int{1, fieldPrecision, 2, 3, 4, fieldSettings} {
		for q := range recs {
			if recs[q][f] != recs[0][f] {
				return Setup{}, setupMismatch(f, recs)
			}
		}
	}
	s := mine
	s.NonZeros, s.Rows = 0, 0
	for q, r := range recs {
		if r[fieldNNZ] < 0 || r[fieldRows] < 0 {
			return Setup{}, fmt.Errorf("dataparallel: rank %d's setup record counts %d feature entries in %d rows", q, r[fieldNNZ], r[fieldRows])
		}
		s.NonZeros += r[fieldNNZ]
		s.Rows += r[fieldRows]
	}
	s.DenseRows = s.Features == "sparse" && s.Rows > 0 && s.Cols > 0 &&
		float64(s.NonZeros)/(float64(s.Rows)*float64(s.Cols)) >= nn.SparseDensity
	return s, nil
}

func versionOf(b []byte) string {
	if len(b) < 8 {
		return ""
	}
	return fmt.Sprintf(", version %d", int64(binary.LittleEndian.Uint64(b)))
}

// setupMismatch is the error of the workers' records differing in field
// f: each rank's value.
func setupMismatch(f int, recs [][setupFields]int64) error {
	show := func(v int64) string {
		switch {
		case f == fieldStorage && v >= 0 && v < int64(len(storageNames)):
			return storageNames[v]
		case f == fieldPrecision && v >= 0 && v < int64(len(precisionNames)):
			return string(precisionNames[v])
		case f == fieldSettings:
			return fmt.Sprintf("%016x", uint64(v))
		}
		return strconv.FormatInt(v, 10)
	}
	var vals []string
	for q, r := range recs {
		vals = append(vals, fmt.Sprintf("rank %d %s", q, show(r[f])))
	}
	return fmt.Errorf("dataparallel: the workers' parts or settings differ in %s (%s): every worker must hold parts of one partitioned data set and run with the same settings",
		agreedNames[f], strings.Join(vals, ", "))
}
