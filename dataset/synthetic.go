package dataset

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

// SyntheticSpecs documents the generated datasets Load accepts by name.
const SyntheticSpecs = `sbm:NODES:AVG_DEGREE:FEATURES:CLASSES[:SEED]  stochastic block model with class-correlated features
                                             (homophily 0.8, feature noise 1: learnable only through the graph);
                                             its public split is 10% training, 10% validation per class
rmat:SCALE:EDGES[:SEED]                      R-MAT graph of 2^SCALE nodes, structure only
rmat:SCALE:EDGES:FEATURES:CLASSES[:SEED]     the same with random balanced labels and class-correlated features
                                             (feature noise 1) to train on, split 10/10/80 as sbm's`

// IsSynthetic reports whether name is a generated dataset's spec.
func IsSynthetic(name string) bool {
	return strings.HasPrefix(name, "sbm:") || strings.HasPrefix(name, "rmat:")
}

// loadSynthetic generates the dataset name describes (see SyntheticSpecs).
func loadSynthetic(name string) (*Dataset, error) {
	kind, spec, _ := strings.Cut(name, ":")
	fields := strings.Split(spec, ":")
	switch kind {
	case "sbm":
		return sbmDataset(name, fields)
	case "rmat":
		return rmatDataset(name, fields)
	}
	return nil, fmt.Errorf("unknown generated dataset %q", name)
}

// specNumbers parses fields as non-negative integers, at least min of them
// and at most max (the last one, a seed, is optional).
func specNumbers(name, form string, fields []string, min, max int) ([]uint64, error) {
	if len(fields) < min || len(fields) > max {
		return nil, fmt.Errorf("dataset %s: want %s", name, form)
	}
	out := make([]uint64, len(fields))
	var errs []error
	for i, f := range fields {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q is not a whole number", f))
		}
		out[i] = v
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dataset %s: %v (want %s)", name, err, form)
	}
	return out, nil
}

func sbmDataset(name string, fields []string) (*Dataset, error) {
	cfg, seed, err := sbmConfig(name, fields)
	if err != nil {
		return nil, err
	}
	nodes := int64(cfg.Nodes)
	if err := roomForGenerated(name, nodes, nodes*int64(cfg.AvgDegree)/2, nodes*int64(cfg.Features)); err != nil {
		return nil, err
	}
	g, x, labels, err := graph.SBM(cfg, seed)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", name, err)
	}
	return sbmWithSplit(name, cfg, seed, g, x, labels)
}

// roomForGenerated refuses a generated graph of nodes and (undirected)
// edges, with values features, that would not fit in the memory available,
// before generating it: sbm:2000000000:5:4:3 or rmat:4:1000000000 crashed
// the runtime out of memory.
func roomForGenerated(name string, nodes, edges, values int64) error {
	need := edges*bytesPerEdge + nodes*bytesPerNode + values*4
	if need < lookAbove {
		return nil
	}
	if avail, ok := availableMemory(); ok && need > avail {
		return fmt.Errorf("dataset %s: %d nodes and %d edges take about %s to generate, more than the %s of memory available", name, nodes, edges, byteSize(need), byteSize(avail))
	}
	return nil
}

// sbmConfig parses the fields of an sbm spec.
func sbmConfig(name string, fields []string) (graph.SBMConfig, uint64, error) {
	const form = "sbm:NODES:AVG_DEGREE:FEATURES:CLASSES[:SEED]"
	v, err := specNumbers(name, form, fields, 4, 5)
	if err != nil {
		return graph.SBMConfig{}, 0, err
	}
	seed := uint64(1)
	if len(v) == 5 {
		seed = v[4]
	}
	if v[0] > graph.MaxNodes || v[2] > 1<<16 || v[3] > 1<<16 || v[3] < 2 || v[1] > v[0] {
		return graph.SBMConfig{}, 0, fmt.Errorf("dataset %s: %d nodes, average degree %d, %d features, %d classes out of range (at most %d nodes, 2 to 65536 classes, a degree below the node count)",
			name, v[0], v[1], v[2], v[3], graph.MaxNodes)
	}
	return graph.SBMConfig{Nodes: int(v[0]), AvgDegree: float64(v[1]), Features: int(v[2]), Classes: int(v[3]),
		Homophily: 0.8, FeatureNoise: 1}, seed, nil
}

// sbmWithSplit is the dataset of a generated SBM (x nil: its features
// are not held) with its public split.
func sbmWithSplit(name string, cfg graph.SBMConfig, seed uint64, g *graph.Graph, x *tensor.Matrix, labels []int32) (*Dataset, error) {
	d := &Dataset{Name: name, Graph: g, Dense: x, Labels: labels, NumClasses: cfg.Classes}
	d.ClassNames = make([]string, d.NumClasses)
	for c := range d.ClassNames {
		d.ClassNames[c] = strconv.Itoa(c)
	}
	public, err := d.fracSplit(0.1, 0.1, seed)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", name, err)
	}
	public.Name = "public"
	d.Splits = []Split{public}
	return d, nil
}

func rmatDataset(name string, fields []string) (*Dataset, error) {
	const form = "rmat:SCALE:EDGES[:SEED] or rmat:SCALE:EDGES:FEATURES:CLASSES[:SEED]"
	v, err := specNumbers(name, form, fields, 2, 5)
	if err != nil {
		return nil, err
	}
	seed := uint64(1)
	if len(v) == 3 || len(v) == 5 {
		seed = v[len(v)-1]
	}
	if v[0] > 30 || v[1] > 1<<40 {
		return nil, fmt.Errorf("dataset %s: scale %d and %d edges out of range (scale at most 30)", name, v[0], v[1])
	}
	values := int64(0)
	if len(v) >= 4 {
		if v[2] > 1<<16 || v[3] < 2 || v[3] > min(1<<16, uint64(1)<<v[0]) {
			return nil, fmt.Errorf("dataset %s: %d features and %d classes out of range (at most 65536 features, 2 to min(65536, nodes) classes)", name, v[2], v[3])
		}
		values = int64(v[2]) << v[0]
	}
	if err := roomForGenerated(name, 1<<v[0], int64(v[1]), values); err != nil {
		return nil, err
	}
	g, err := graph.RMAT(int(v[0]), int64(v[1]), graph.RMATA, graph.RMATB, graph.RMATC, seed)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", name, err)
	}
	d := &Dataset{Name: name, Graph: g}
	if len(v) < 4 {
		return d, nil
	}
	x, labels, err := graph.ClassFeatures(g.N, int(v[3]), int(v[2]), 1, seed)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", name, err)
	}
	d.Dense, d.Labels, d.NumClasses = x, labels, int(v[3])
	d.ClassNames = make([]string, d.NumClasses)
	for c := range d.ClassNames {
		d.ClassNames[c] = strconv.Itoa(c)
	}
	public, err := d.fracSplit(0.1, 0.1, seed)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", name, err)
	}
	public.Name = "public"
	d.Splits = []Split{public}
	return d, nil
}
