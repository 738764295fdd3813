package job

import (
	"encoding/json"
	"fmt"
	"github.com/graft-gnn/graft/dataset"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/nn"
)

// ModelFormat is the value of the "format" metadata key of the model files
// Save writes. Files without it were written before the metadata recorded
// the architecture; ReadModelInfo infers that from the tensors' shapes.
const ModelFormat = "graft-model/1"

// ModelInfo is what a saved model's metadata records: the model, how its
// input was prepared, the split it was selected on and what it scored.
// Evaluating the file on the same dataset reproduces the scores exactly.
type ModelInfo struct {
	// Model is the architecture, InFeatures and Classes included; its Seed
	// is the training run's.
	Model  nn.Config
	Layout nn.Layout // the parameters' key names
	// Dataset is the dataset's name and Source the --dataset argument of
	// the run ("" when it trained from a part directory).
	Dataset, Source string
	// Files are the run's --labels and --features files, if any.
	Files dataset.NodeFiles
	// Split is the split specification and SplitSeed the seed it was
	// resolved with (random and fractional splits depend on it).
	Split     string
	SplitSeed uint64
	// LCC, RowNormalize and Features are the input's preparation: the
	// largest connected component only, features scaled to sum to 1 per
	// node, and their storage (dense, sparse or auto). Nodes counts the
	// graph's nodes after it.
	LCC, RowNormalize bool
	Features          string
	Nodes             int
	// BF16 is a full-graph run at --precision bf16: its dense features and
	// its layers' projections were rounded to bfloat16, and evaluating it
	// rounds them alike.
	BF16 bool
	// BF16Layers is a mini-batch run at --precision bf16 whose exact
	// evaluation held the dense features and every hidden layer's output
	// in bfloat16, which evaluating it does alike.
	BF16Layers bool
	// EvalSampler is the run's --eval-sampler: it evaluated on sampled
	// neighbourhoods, where evaluate and predict are exact.
	EvalSampler string
	// Epoch is the saved (best) epoch and TrainAcc, ValAcc and TestAcc
	// its accuracies as the run reported them, when Scored (files of an
	// older graft do not record them).
	Epoch                     int
	TrainAcc, ValAcc, TestAcc float64
	Scored                    bool
	// ClassNames are the names of the classes 0..Classes-1 as the run's
	// labels named them, when they were names (nil when the classes were
	// numbered, or the file does not record them).
	ClassNames []string
	// Assumed lists the settings the file does not record (older files, or
	// a run from a part directory), which took graft train's defaults.
	Assumed []string
}

// metadata is the safetensors metadata of info.
func (info ModelInfo) metadata() map[string]string {
	mc := info.Model
	m := map[string]string{
		"format": ModelFormat, "layout": string(info.Layout),
		"model": mc.Model, "layers": strconv.Itoa(mc.Layers), "hidden": strconv.Itoa(mc.Hidden),
		"heads": strconv.Itoa(mc.Heads), "output_heads": strconv.Itoa(mc.OutputHeads),
		"in_features": strconv.Itoa(mc.InFeatures), "classes": strconv.Itoa(mc.Classes),
		"activation": string(mc.Activation), "normalize": strconv.FormatBool(mc.Normalize),
		"seed":    strconv.FormatUint(mc.Seed, 10),
		"dataset": info.Dataset, "split": info.Split,
		"nodes": strconv.Itoa(info.Nodes), "features": info.Features,
		"epoch": strconv.Itoa(info.Epoch), "train_acc": formatFloat(info.TrainAcc),
		"val_acc": formatFloat(info.ValAcc), "test_acc": formatFloat(info.TestAcc),
	}
	if info.Source != "" {
		m["source"] = info.Source
	}
	if info.BF16 {
		m["precision"] = "bf16"
	}
	if info.BF16Layers {
		m["evaluation"] = "bf16-layers"
	}
	if info.EvalSampler != "" {
		m["eval_sampler"] = info.EvalSampler
	}
	if info.ClassNames != nil {
		b, _ := json.Marshal(info.ClassNames)
		m["class_names"] = string(b)
	}
	if info.Files.Labels != "" {
		m["labels_file"] = info.Files.Labels
	}
	if info.Files.Features != "" {
		m["features_file"] = info.Files.Features
	}
	for k, v := range map[string]string{"lcc": strconv.FormatBool(info.LCC),
		"row_normalize": strconv.FormatBool(info.RowNormalize), "split_seed": strconv.FormatUint(info.SplitSeed, 10)} {
		if !slices.Contains(info.Assumed, k) {
			m[k] = v
		}
	}
	return m
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ReadModelInfo reads what h, a saved model's header, records. A file of
// an older graft (no "format" key) has its architecture inferred from its
// tensors' shapes and its input preparation assumed as graft train's
// defaults, listed in Assumed.
func ReadModelInfo(h *nn.ParamsHeader) (ModelInfo, error) {
	md := h.Metadata
	switch f := md["format"]; {
	case f == "":
		return inferModelInfo(h)
	case f != ModelFormat:
		return ModelInfo{}, fmt.Errorf("model file format %q; this graft reads %q (a newer graft wrote it?)", f, ModelFormat)
	}
	r := metaReader{md: md}
	info := ModelInfo{
		Model: nn.Config{Model: md["model"], Layers: r.int("layers"), Hidden: r.int("hidden"),
			Heads: r.int("heads"), OutputHeads: r.int("output_heads"), InFeatures: r.int("in_features"),
			Classes: r.int("classes"), Activation: nn.Activation(md["activation"]), Normalize: r.bool("normalize", false),
			Seed: r.uint("seed")},
		Dataset: md["dataset"], Source: md["source"], Split: md["split"],
		Files: dataset.NodeFiles{Labels: md["labels_file"], Features: md["features_file"]},
		LCC:   r.bool("lcc", false), RowNormalize: r.bool("row_normalize", true), Features: md["features"],
		Nodes: r.int("nodes"), Epoch: r.int("epoch"), BF16: md["precision"] == "bf16", BF16Layers: md["evaluation"] == "bf16-layers", EvalSampler: md["eval_sampler"],
		TrainAcc: r.float("train_acc"), ValAcc: r.float("val_acc"), TestAcc: r.float("test_acc"), Scored: true,
	}
	info.Assumed = r.missing
	if v, ok := md["class_names"]; ok {
		if err := json.Unmarshal([]byte(v), &info.ClassNames); err != nil || len(info.ClassNames) != info.Model.Classes {
			return ModelInfo{}, fmt.Errorf("model file metadata class_names: want a JSON list of %d names, one per class", info.Model.Classes)
		}
	}
	info.SplitSeed = info.Model.Seed
	if _, ok := md["split_seed"]; ok {
		info.SplitSeed = r.uint("split_seed")
	} else {
		info.Assumed = append(info.Assumed, "split_seed")
	}
	if r.err != nil {
		return ModelInfo{}, r.err
	}
	layout, err := nn.ParseLayout(md["layout"])
	if err != nil {
		return ModelInfo{}, err
	}
	info.Layout = layout
	return info, nil
}

// metaReader parses metadata values, keeping the first error and the
// optional keys that are missing.
type metaReader struct {
	md      map[string]string
	err     error
	missing []string
}

func (r *metaReader) value(key string) (string, bool) {
	v, ok := r.md[key]
	if !ok && r.err == nil {
		r.err = fmt.Errorf("model file metadata lacks %q", key)
	}
	return v, ok
}

func (r *metaReader) int(key string) int {
	v, ok := r.value(key)
	n, err := strconv.Atoi(v)
	if ok && err != nil && r.err == nil {
		r.err = fmt.Errorf("model file metadata %s=%q: want an integer", key, v)
	}
	return n
}

func (r *metaReader) uint(key string) uint64 {
	v, ok := r.value(key)
	n, err := strconv.ParseUint(v, 10, 64)
	if ok && err != nil && r.err == nil {
		r.err = fmt.Errorf("model file metadata %s=%q: want an unsigned integer", key, v)
	}
	return n
}

func (r *metaReader) float(key string) float64 {
	v, ok := r.value(key)
	x, err := strconv.ParseFloat(v, 64)
	if ok && err != nil && r.err == nil {
		r.err = fmt.Errorf("model file metadata %s=%q: want a number", key, v)
	}
	return x
}

// bool reads an optional flag: a missing one takes def and is listed.
func (r *metaReader) bool(key string, def bool) bool {
	v, ok := r.md[key]
	if !ok {
		r.missing = append(r.missing, key)
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("model file metadata %s=%q: want true or false", key, v)
	}
	return b
}

var layerName = regexp.MustCompile(`^layers\.(\d+)\.`)

// inferModelInfo reads a file written before the metadata recorded the
// architecture: it held model, dataset, split, epoch and seed, and graft's
// own layout. Layers, widths and heads follow from the tensors' shapes;
// the activation was the model's default; normalisation and the input's
// preparation were not recorded and take graft train's defaults.
func inferModelInfo(h *nn.ParamsHeader) (ModelInfo, error) {
	md := h.Metadata
	model := md["model"]
	layers := 0
	for _, name := range h.Names {
		m := layerName.FindStringSubmatch(name)
		if m == nil {
			return ModelInfo{}, fmt.Errorf("model file has tensor %s, which graft does not write (not a graft model?)", name)
		}
		i, _ := strconv.Atoi(m[1])
		layers = max(layers, i+1)
	}
	weight := map[string]string{"gcn": "weight", "sage": "lin_l.weight", "gat": "lin.weight"}[model]
	if weight == "" || layers == 0 {
		return ModelInfo{}, fmt.Errorf("model file records model %q and %d layers; it cannot be evaluated (retrain with --save)", model, layers)
	}
	shape := func(layer int, field string) ([]int, error) {
		name := "layers." + strconv.Itoa(layer) + "." + field
		s, ok := h.Shapes[name]
		if !ok {
			return nil, fmt.Errorf("model file lacks %s for a %s model", name, model)
		}
		return s, nil
	}
	first, err := shape(0, weight)
	if err != nil {
		return ModelInfo{}, err
	}
	last, err := shape(layers-1, weight)
	if err != nil {
		return ModelInfo{}, err
	}
	mc := nn.Config{Model: model, Layers: layers, InFeatures: first[1], Classes: last[0], Heads: 1, OutputHeads: 1}
	mc.Hidden = first[0]
	if model == "gat" {
		att, err := shape(0, "att_src")
		if err != nil {
			return ModelInfo{}, err
		}
		out, err := shape(layers-1, "att_src")
		if err != nil {
			return ModelInfo{}, err
		}
		mc.OutputHeads, mc.Classes = out[1], out[2]
		if layers > 1 {
			mc.Heads, mc.Hidden = att[1], att[2]
		}
	}
	if layers == 1 {
		mc.Hidden = 0
	}
	mc = mc.WithDefaults()
	r := metaReader{md: md}
	info := ModelInfo{Model: mc, Layout: nn.TorchLayout, Dataset: md["dataset"], Source: md["dataset"],
		Split: md["split"], Epoch: r.int("epoch"), RowNormalize: true, Features: "auto",
		Assumed: []string{"normalize", "lcc", "row_normalize", "features", "split_seed"}}
	info.Model.Seed = r.uint("seed")
	info.SplitSeed = info.Model.Seed
	if r.err != nil {
		return ModelInfo{}, fmt.Errorf("%v (an older graft's file?)", r.err)
	}
	return info, nil
}

// AssumedNote says, in one line, which settings of info were assumed, or
// returns "" when the file records them all.
func (info ModelInfo) AssumedNote() string {
	if len(info.Assumed) == 0 {
		return ""
	}
	known := map[string][2]string{"normalize": {"--normalize", "--normalize=false"}, "lcc": {"--lcc", "--lcc=false"},
		"row_normalize": {"--row-normalize", "--row-normalize=true"}, "features": {"--features", "--features auto"},
		"split_seed": {"the split's seed", "the training seed"}}
	var what, assumed []string
	for _, k := range info.Assumed {
		what, assumed = append(what, known[k][0]), append(assumed, known[k][1])
	}
	return "the model file does not record " + strings.Join(what, ", ") + "; assuming " + strings.Join(assumed, ", ")
}
