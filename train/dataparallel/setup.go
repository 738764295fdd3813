package dataparallel

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
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
	// Settings are the training settings, a value for each of
	// settingGroups: the numbers as they are, the others fingerprinted
	// (settingsOf).
	Settings [nSettings]int64
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
//	settings  nSettings of them, settingGroups' values in their order
//	nonzeros  the part's feature entries (sparse features; else 0)
//	rows      the part's feature rows
//
// The fields from nodes to the last setting must be equal on every worker
// (checked in checkOrder, so that every worker names the same one when
// several differ); the last two are summed.
const (
	setupVersion = 2
	setupFields  = fieldSettings + nSettings + 2
	// Fields shown or summed otherwise than as numbers.
	fieldStorage   = 2
	fieldPrecision = 5
	fieldSettings  = 6 // the first setting
	fieldNNZ       = setupFields - 2
	fieldRows      = setupFields - 1
)

// A settingGroup is settings every worker must train with alike, one field
// of the setup record: its name in the error of workers differing in it,
// its value (a number as it is, else a fingerprint) and how a value shows.
type settingGroup struct {
	name  string
	value func(cfg train.Config, opts Options) (int64, error)
	show  func(int64) string // nil: an integer, in decimal
}

// settingGroups are the training settings the workers agree on, by group,
// so that workers that differ are told which group differs.
var settingGroups = [...]settingGroup{
	{"model", func(cfg train.Config, _ Options) (int64, error) {
		return fingerprint("%+v", cfg.Model.WithDefaults()), nil
	}, showFingerprint},
	{"optimiser (update rule, rates and learning-rate schedule)", func(cfg train.Config, _ Options) (int64, error) {
		o := cfg.Optimizer
		return fingerprint("%s %v %v %v %v %v %v %T %+v %v", o.Algorithm, o.LR, o.Momentum, o.Nesterov, o.Beta1, o.Beta2, o.Eps,
			o.Schedule, o.Schedule, o.CatchUp), nil
	}, showFingerprint},
	{"weight decay", func(cfg train.Config, _ Options) (int64, error) {
		return int64(math.Float64bits(cfg.WeightDecay)), nil
	}, showFloat},
	{"weight decay of the first layer only", func(cfg train.Config, _ Options) (int64, error) {
		return boolValue(cfg.DecayFirstLayerOnly), nil
	}, showBool},
	{"epochs", func(cfg train.Config, _ Options) (int64, error) { return int64(cfg.Epochs), nil }, nil},
	{"optimiser steps", func(cfg train.Config, _ Options) (int64, error) { return int64(cfg.Steps), nil }, nil},
	{"patience", func(cfg train.Config, _ Options) (int64, error) { return int64(cfg.Patience), nil }, nil},
	{"model selection (by validation loss, or by which metric)", func(cfg train.Config, _ Options) (int64, error) {
		m := cfg.Metric
		if m == "" {
			m = train.Accuracy
		}
		return fingerprint("%v %s", cfg.SelectByLoss, m), nil
	}, showFingerprint},
	{"evaluation interval (epochs)", func(cfg train.Config, _ Options) (int64, error) { return int64(max(cfg.EvalEvery, 1)), nil }, nil},
	{"gradient accumulation (micro-batches a step)", func(cfg train.Config, _ Options) (int64, error) {
		return int64(max(cfg.Accumulate, 1)), nil
	}, nil},
	{"sampler", func(_ train.Config, opts Options) (int64, error) { return fingerprint("%s", opts.Sampler), nil }, showFingerprint},
	{"batch size", func(_ train.Config, opts Options) (int64, error) { return int64(opts.BatchSize), nil }, nil},
	// The compressors' names: made here for them alone.
	{"feature-row compression", func(_ train.Config, opts Options) (int64, error) {
		if opts.Codec == nil {
			return fingerprint("none"), nil
		}
		s := opts.Codec().Name()
		if opts.Schedule != nil {
			s += " " + opts.Schedule().String()
		}
		return fingerprint("codec %s", s), nil
	}, showFingerprint},
	{"gradient compression", func(_ train.Config, opts Options) (int64, error) {
		if opts.Grad == nil {
			return fingerprint("none"), nil
		}
		m, err := opts.Grad()
		if err != nil {
			return 0, err
		}
		return fingerprint("grad %s", m.String()), nil
	}, showFingerprint},
}

// nSettings is len(settingGroups), which Setup cannot name (Setup is in
// Options, which settingGroups read); the two arrays below are valid only
// where they are equal.
const nSettings = 14

var (
	_ [nSettings - len(settingGroups)]struct{}
	_ [len(settingGroups) - nSettings]struct{}
)

// checkOrder is the order in which the agreed fields are compared: the
// precision before the storage, since at bf16 dense features are held in
// bf16, so a precision that differs shows in the storage too.
var checkOrder = func() []int {
	order := []int{1, fieldPrecision, fieldStorage, 3, 4}
	for i := range nSettings {
		order = append(order, fieldSettings+i)
	}
	return order
}()

var (
	storageNames   = []string{"none", "dense", "bf16", "sparse"}
	precisionNames = []train.Precision{train.FP32, train.BF16}
	partNames      = [fieldSettings]string{"setup record version", "graph nodes", "feature storage", "feature columns", "classes", "precision"}
)

// fingerprint is FNV-64a of the settings format and args print.
func fingerprint(format string, args ...any) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, format, args...)
	return int64(h.Sum64())
}

func boolValue(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func showFingerprint(v int64) string { return fmt.Sprintf("fingerprint %016x", uint64(v)) }
func showFloat(v int64) string {
	return strconv.FormatFloat(math.Float64frombits(uint64(v)), 'g', -1, 64)
}
func showBool(v int64) string { return strconv.FormatBool(v != 0) }

// settingsOf is the values of settingGroups the worker trains with.
func settingsOf(cfg train.Config, opts Options) ([nSettings]int64, error) {
	var v [nSettings]int64
	for i, g := range settingGroups {
		var err error
		if v[i], err = g.value(cfg, opts); err != nil {
			return v, err
		}
	}
	return v, nil
}

// partSetup is sp's figures, with the settings those the worker runs
// with.
func partSetup(sp *partstore.Part, cfg train.Config, opts Options) (Setup, error) {
	settings, err := settingsOf(cfg, opts)
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
	v := []int64{setupVersion, int64(s.Nodes), int64(indexOf(storageNames, s.Features)), int64(s.Cols), int64(s.Classes),
		int64(indexOf(precisionNames, s.Precision))}
	v = append(v, s.Settings[:]...)
	v = append(v, s.NonZeros, s.Rows)
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
// setup, or the same error naming the first field that differs (in
// checkOrder) and each worker's value of it.
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
	for _, f := range checkOrder {
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
// f: its name and each rank's value.
func setupMismatch(f int, recs [][setupFields]int64) error {
	name, show := fieldName(f), func(v int64) string { return strconv.FormatInt(v, 10) }
	switch {
	case f >= fieldSettings:
		if g := settingGroups[f-fieldSettings]; g.show != nil {
			show = g.show
		}
	case f == fieldStorage:
		show = func(v int64) string { return nameOf(storageNames, v) }
	case f == fieldPrecision:
		show = func(v int64) string { return nameOf(precisionNames, v) }
	}
	var vals []string
	for q, r := range recs {
		vals = append(vals, fmt.Sprintf("rank %d %s", q, show(r[f])))
	}
	return fmt.Errorf("dataparallel: the workers' parts or settings differ in %s (%s): every worker must hold parts of one partitioned data set and run with the same settings",
		name, strings.Join(vals, ", "))
}

// fieldName is the name of the setup record's field f in errors.
func fieldName(f int) string {
	if f >= fieldSettings {
		return settingGroups[f-fieldSettings].name
	}
	return partNames[f]
}

// nameOf is names[v] as a string, or v where names has none.
func nameOf[T ~string](names []T, v int64) string {
	if v >= 0 && v < int64(len(names)) {
		return string(names[v])
	}
	return strconv.FormatInt(v, 10)
}
