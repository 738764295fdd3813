package job

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

// Resumable names the settings a resume may change when Spec.ResumeAllow
// lists them. They decide when the run stops (epochs, steps, patience) or
// which epochs are evaluated (eval-every: model selection, patience and an
// adaptive compression schedule see only those), not the updates made
// before that, so they need saying but are not refused.
var Resumable = []string{"epochs", "steps", "patience", "eval-every", "parts"}

// resizing are the settings that change with the number of workers: a
// resume that allows "parts" allows them too. Parameters and optimiser
// state are the same on every worker, so a checkpoint of N workers
// continues on M; state kept per worker (gradient compression's residuals,
// a streaming codec's reconstructions) does not carry over, and a resize
// with it is refused.
var resizing = []string{"partition", "partition-seed", "part-dir"}

// untracked are the Spec fields, by path, that do not determine a run's
// trajectory, with the reason: a resume may change them freely. A path
// covers the fields under it. Every other field is recorded (trajectory),
// so a field added to Spec or train.Config is compared on resume unless it
// is listed here.
var untracked = map[string]string{
	"DataDir":                 "where a named dataset is found; the dataset's identity is recorded",
	"Recipe":                  "what the recipe set is recorded setting by setting",
	"RecipeNote":              "a message",
	"Link":                    "an emulated link changes the reported time, not the training",
	"CheckpointDir":           "checkpointing",
	"CheckpointEvery":         "checkpointing",
	"Resume":                  "checkpointing",
	"ResumeAllow":             "checkpointing",
	"Save":                    "an output",
	"SaveFormat":              "an output",
	"MetricsFile":             "an output",
	"MetricsAddr":             "an output",
	"Place":                   "how the processes of a job find each other",
	"Launch":                  "how the processes of a job find each other",
	"Progress":                "reporting",
	"BatchProgress":           "reporting",
	"Log":                     "reporting",
	"Train.Reducer":           "how workers combine, which Parts decides",
	"Train.Optimizer.CatchUp": "follows from --grad-compress, which is recorded",
	"Async":                   "a parameter-server run writes no checkpoints",
	"Pipeline":                "a pipeline run writes no checkpoints (its processes compare it before training)",
	"Train.Model.InFeatures":  "taken from the data (the checkpoint's model fingerprint checks it)",
	"Train.Model.Classes":     "taken from the data (the checkpoint's model fingerprint checks it)",
	"Files.Map":               "mapping the features or reading them gives the same values",
}

// settingNames names every recorded field by the flag that sets it, or,
// for the settings only a recipe gives (recipeSettings), by a name of the
// same form. Several fields may share a name when one flag sets them all.
var settingNames = map[string]string{
	"Dataset": "dataset", "Split": "split", "LCC": "lcc", "RowNormalize": "row-normalize",
	"Files.Labels": "labels", "Files.Features": "features", "Features": "features",
	"PartDir":           "part-dir",
	"Train.Model.Model": "model", "Train.Model.Hidden": "hidden", "Train.Model.Layers": "layers",
	"Train.Model.Heads": "heads", "Train.Model.OutputHeads": "output-heads", "Train.Model.Dropout": "dropout",
	"Train.Model.AttentionDropout": "attention-dropout", "Train.Model.Activation": "activation",
	"Train.Model.Init": "init", "Train.Model.Seed": "seed", "Train.Model.Normalize": "normalize",
	"Train.Optimizer.Algorithm": "optimizer", "Train.Optimizer.LR": "lr", "Train.Optimizer.Momentum": "momentum",
	"Train.Optimizer.Nesterov": "nesterov", "Train.Optimizer.Beta1": "beta1", "Train.Optimizer.Beta2": "beta2",
	"Train.Optimizer.Eps": "eps", "Train.Optimizer.Schedule": "lr-schedule",
	"Train.WeightDecay": "weight-decay", "Train.DecayFirstLayerOnly": "weight-decay-scope",
	"Train.Epochs": "epochs", "Train.Steps": "steps", "Train.Patience": "patience",
	"Train.SelectByLoss": "select", "Train.Metric": "metric", "Train.EvalEvery": "eval-every",
	"Train.Accumulate": "accumulate",
	"Sampler":          "sampler", "BatchSize": "batch-size", "EvalSampler": "eval-sampler", "Precision": "precision",
	"Parts": "parts", "Partition": "partition", "PartitionSeed": "partition-seed",
	"Codec": "compress", "Schedule": "schedule", "GradCompress": "grad-compress", "CompressLast": "compress-last", "EvalCodec": "eval-compress",
	"Rebalance": "rebalance",
}

// recipeSettings are the recorded settings no flag of graft train sets:
// a different --recipe or --model changes them.
var recipeSettings = []string{"output-heads", "attention-dropout", "activation", "init",
	"momentum", "nesterov", "beta1", "beta2", "eps", "lr-schedule", "weight-decay-scope", "steps"}

// trajectory records, by flag name, every setting of s that determines the
// path a run takes: every field of Spec (and of its train.Config) but those
// untracked lists. A resume must repeat them, but for those in Resumable
// that ResumeAllow names. Settings that a run does not use are recorded as
// "unused" (compression with one part, the batch size without a sampler),
// so changing them is not refused.
func (s *Spec) trajectory(in *input, schedule string) map[string]string {
	derived := s.derivedSettings(in, schedule)
	r := map[string]string{}
	walkSettings(reflect.ValueOf(s).Elem(), "", func(path string, v reflect.Value) {
		name := settingName(path)
		val, ok := derived[path]
		if !ok {
			val = formatSetting(v)
		}
		r[name] = val
	})
	r["data"] = dataIdentity(in)
	r[recordVersionKey] = recordVersion
	return canonicalSpecs(r)
}

// specSettings are the recorded settings that name a method by a spec of
// its own, with the spec the method parsed from it writes: gradient
// compression's options in one order, a codec's every field (delta is
// delta:4:0:0:delta). Specs that parse to the same method are the same
// setting.
var specSettings = map[string]func(spec string) (string, error){
	"grad-compress": func(spec string) (string, error) {
		m, err := gradcomp.New(spec, gradcomp.Options{})
		if err != nil {
			return "", err
		}
		return m.String(), nil
	},
	"compress":      codecName,
	"eval-compress": codecName,
}

func codecName(spec string) (string, error) {
	c, err := compress.New(spec)
	if err != nil {
		return "", err
	}
	return c.Name(), nil
}

// canonicalSpecs returns record with its specSettings written as their
// methods write them, so that a resume compares what they parse to (a
// checkpoint records them so since this; an older one, as they were
// typed). A value that does not parse ("unused", a method this graft
// does not know) stays as it is, as does one whose method writes a spec
// that would not give it back.
func canonicalSpecs(record map[string]string) map[string]string {
	if record == nil {
		return nil
	}
	r := maps.Clone(record)
	for name, canonical := range specSettings {
		v, ok := r[name]
		if !ok {
			continue
		}
		if c, err := canonical(v); err == nil {
			if again, err := canonical(c); err == nil && again == c {
				r[name] = c
			}
		}
	}
	return r
}

// dataIdentity fingerprints the data a run trains on, so that a resume on
// data changed under the same name (a dataset file rewritten, a split file
// edited, other stored parts) is refused: its size and an FNV-64a of its
// degree sequence, labels, split rows, and the neighbours and features of
// 1024 evenly spaced nodes (all of them would cost a pass over the largest
// arrays); of stored parts, the manifest's hashes of the part files.
func dataIdentity(in *input) string {
	h := fnv.New64a()
	if in.manifest != nil {
		for _, k := range slices.Sorted(maps.Keys(in.manifest.Files)) {
			fmt.Fprintf(h, "%s=%s\n", k, in.manifest.Files[k])
		}
		return fmt.Sprintf("parts %016x", h.Sum64())
	}
	p := &in.problem
	if p.Graph == nil {
		return "unknown"
	}
	buf := make([]byte, 0, 1<<16)
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	for _, o := range p.Graph.Offsets {
		if buf = binary.LittleEndian.AppendUint64(buf, uint64(o)); len(buf) == cap(buf) {
			flush()
		}
	}
	n, k := p.Graph.N, min(p.Graph.N, 1024)
	adj := make([][]int32, 0, 2*k)
	for i := range k {
		adj = append(adj, p.Graph.Adj(i*n/k), []int32{-2})
	}
	for _, rows := range append(adj, p.Labels, []int32{-2}, p.Train, []int32{-2}, p.Val, []int32{-2}, p.Test) {
		for _, v := range rows {
			if buf = binary.LittleEndian.AppendUint32(buf, uint32(v)); len(buf) == cap(buf) {
				flush()
			}
		}
	}
	flush()
	x := p.Features
	if h := p.FeaturesBF16; h != nil {
		x = nn.DenseFeatures(widenedRows(h))
	}
	sampledRows(x, func(col int, v float32) {
		buf = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(buf, uint32(col)), math.Float32bits(v))
		if len(buf) >= cap(buf)-8 {
			flush()
		}
	})
	flush()
	return fmt.Sprintf("%d nodes, %d edges, %d features, %016x", p.Graph.N, p.Graph.NumEdges(), x.Cols(), h.Sum64())
}

// widenedRows is the float32 matrix of the rows of x that sampledRows
// reads, in order: sampledRows reads all of its rows as it reads those
// of x.
func widenedRows(x *tensor.MatrixBF16) *tensor.Matrix {
	k := min(x.Rows, 1024)
	m := tensor.New(k, x.Cols)
	for i := range k {
		r := i * x.Rows / k
		tensor.FromBF16(m.Row(i), x.Data[r*x.Cols:(r+1)*x.Cols])
	}
	return m
}

// sampledRows calls f with the column and value of every non-zero of 1024
// evenly spaced rows of x (all of them when it has fewer), whether x is
// stored dense or sparse.
func sampledRows(x nn.Features, f func(col int, v float32)) {
	n := x.Rows()
	k := min(n, 1024)
	for i := range k {
		r := i * n / k
		if a := x.Sparse; a != nil {
			for j := a.Offsets[r]; j < a.Offsets[r+1]; j++ {
				v := float32(1) // a pattern without values
				if a.Values != nil {
					v = a.Values[j]
				}
				f(int(a.Indices[j]), v)
			}
			continue
		}
		for c, v := range x.Dense.Data[r*x.Dense.Cols : (r+1)*x.Dense.Cols] {
			if v != 0 {
				f(c, v)
			}
		}
	}
}

// recordVersionKey marks a record of every setting (trajectory). Checkpoints
// without it recorded these settings, some only when set.
const (
	recordVersionKey = "record-version"
	recordVersion    = "2"
)

// fromFirstRecord makes the record was of a checkpoint from before
// recordVersion comparable with want, this run's: it gives the settings it
// left out when unset the value they had, and leaves out of both those it
// did not record at all, listing them as unknown.
func fromFirstRecord(was, want map[string]string) (map[string]string, map[string]string, []string) {
	was = maps.Clone(was)
	absent := func(k, v string) {
		if _, ok := was[k]; !ok {
			was[k] = v
		}
	}
	absent("metric", string(train.Accuracy))
	absent("labels", "")
	absent("sampler", "")
	if was["sampler"] == "" {
		absent("batch-size", "unused")
		absent("eval-sampler", "unused")
	}
	absent("eval-sampler", "")
	if was["parts"] == "1" {
		for _, k := range []string{"partition", "partition-seed", "compress", "schedule"} {
			absent(k, "unused")
		}
	}
	was[recordVersionKey] = recordVersion
	kept := map[string]string{}
	var unknown []string
	for k, v := range want {
		if _, ok := was[k]; ok {
			kept[k] = v
		} else {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return was, kept, unknown
}

// derivedSettings gives, by field path, the recorded value of the settings
// whose value in force is not the field's own: the data as loaded and split,
// the defaults a zero value stands for, and the settings a run does not use.
func (s *Spec) derivedSettings(in *input, schedule string) map[string]string {
	c := &s.Train
	features := "dense"
	if in.sparse {
		features = "sparse"
	}
	if s.Files.Features != "" { // --features names the file; its storage follows from it
		features = s.Files.Features + " (" + features + ")"
	}
	selectBy := "acc"
	if c.SelectByLoss {
		selectBy = "loss"
	}
	d := map[string]string{
		"Dataset": in.name, "Split": in.split, "Features": features, "Files.Features": features,
		"Train.SelectByLoss": selectBy, "Train.Metric": string(cmpOr(c.Metric, train.Accuracy)),
		"Train.DecayFirstLayerOnly": "all",
		"Train.EvalEvery":           strconv.Itoa(max(c.EvalEvery, 1)),
		"Train.Accumulate":          strconv.Itoa(max(c.Accumulate, 1)),
		"Precision":                 cmpOr(s.Precision, "fp32"),
		"Rebalance":                 "off",
	}
	if s.Rebalance != 0 {
		d["Rebalance"] = strconv.FormatFloat(s.Rebalance, 'g', -1, 64)
	}
	if c.DecayFirstLayerOnly {
		d["Train.DecayFirstLayerOnly"] = "first-layer"
	}
	if c.Optimizer.Schedule == nil {
		d["Train.Optimizer.Schedule"] = "constant"
	}
	if in.manifest != nil { // the directory may move; its layout is what it is
		d["PartDir"] = "layout " + in.manifest.Layout
	}
	if s.Parts > 1 {
		if in.layout != nil {
			d["Partition"] = fmt.Sprintf("%s (layout %016x)", s.Partition, partstore.Fingerprint(in.layout))
		}
		d["Codec"] = cmpOr(s.Codec, "none")
		if strings.HasPrefix(schedule, "linear:") || strings.HasPrefix(schedule, "exp:") {
			schedule += fmt.Sprintf(" over %d epochs", c.Epochs) // the ratios depend on the epoch count
		}
		d["Schedule"] = schedule
		d["GradCompress"] = cmpOr(s.GradCompress, "none")
		d["EvalCodec"] = cmpOr(s.EvalCodec, "none")
	} else {
		for _, p := range []string{"Partition", "PartitionSeed", "Codec", "Schedule", "GradCompress", "CompressLast", "EvalCodec"} {
			d[p] = "unused"
		}
	}
	if s.Sampler == "" {
		d["BatchSize"], d["EvalSampler"] = "unused", "unused"
	}
	return d
}

func cmpOr[T comparable](v, fallback T) T {
	var zero T
	if v == zero {
		return fallback
	}
	return v
}

// walkSettings calls f with the path and value of every exported field of
// the struct v that untracked does not cover, descending into structs.
func walkSettings(v reflect.Value, prefix string, f func(path string, v reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		path := prefix + sf.Name
		if _, skip := untracked[path]; skip || !sf.IsExported() {
			continue
		}
		if fv := v.Field(i); fv.Kind() == reflect.Struct {
			walkSettings(fv, path+".", f)
		} else {
			f(path, fv)
		}
	}
}

// settingName is the name path is recorded under: settingNames', or for a
// field it does not know, the path itself in lower case (so that a new
// field is compared even before it is given a name).
func settingName(path string) string {
	if n, ok := settingNames[path]; ok {
		return n
	}
	return strings.ToLower(path)
}

// formatSetting writes a field's value: numbers as the flags take them,
// anything else (a learning-rate schedule) with its type and fields.
func formatSetting(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return "none"
		}
		e := v.Elem()
		for e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface {
			if e.IsNil() {
				return "none"
			}
			e = e.Elem()
		}
		return fmt.Sprintf("%T%+v", e.Interface(), e.Interface())
	case reflect.Slice, reflect.Array:
		s := make([]string, v.Len())
		for i := range s {
			s[i] = formatSetting(v.Index(i))
		}
		return strings.Join(s, ",")
	case reflect.Func, reflect.Map, reflect.Chan:
		if v.IsNil() {
			return "none"
		}
		return "set"
	}
	return fmt.Sprintf("%+v", v.Interface())
}
