package job

import (
	"bytes"
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/nn"
)

// fromInput are the fields whose recorded value is the data as loaded (the
// resume tests change them end to end), not the field itself.
var fromInput = []string{"Dataset", "Split", "Features", "Files.Features", "PartDir"}

// Every field of Spec is either recorded, under a name of its own flag or
// recipe setting, or listed as untracked with its reason; changing any
// recorded field changes the record, so a resume compares it. A field added
// to Spec or train.Config fails here until it is named or listed.
func TestTrajectoryRecordsEverySetting(t *testing.T) {
	base := coraSpec(t)
	base.Parts, base.Codec, base.Schedule = 2, "topk", "fixed:4" // the settings used only with parts and a sampler, in use
	base.Sampler, base.BatchSize, base.EvalSampler = "neighbor:5,5", 64, "neighbor:5,5"
	in := &input{name: "cora", split: "public"}
	was := base.trajectory(in, base.Schedule)
	var paths []string
	walkSettings(reflect.ValueOf(&base).Elem(), "", func(path string, _ reflect.Value) { paths = append(paths, path) })
	for _, path := range paths {
		if _, ok := settingNames[path]; !ok {
			t.Errorf("%s is recorded without a name: add it to settingNames (or, if it does not determine the trajectory, to untracked)", path)
		}
		if slices.Contains(fromInput, path) {
			continue
		}
		s := base
		if !perturb(fieldByPath(reflect.ValueOf(&s).Elem(), path)) {
			t.Errorf("%s: the test cannot change a field of its kind", path)
			continue
		}
		if now := s.trajectory(in, s.Schedule); maps.Equal(now, was) {
			t.Errorf("changing %s leaves the record as it was", path)
		}
	}
	for path := range settingNames {
		if !slices.Contains(paths, path) {
			t.Errorf("settingNames names %s, which is not a recorded field", path)
		}
	}
	for path := range untracked {
		if !fieldByPath(reflect.ValueOf(&base).Elem(), path).IsValid() {
			t.Errorf("untracked lists %s, which is not a field of Spec", path)
		}
	}
	for _, name := range append(Resumable, recipeSettings...) {
		if !slices.Contains(slices.Collect(maps.Values(settingNames)), name) {
			t.Errorf("%s is not the name of a recorded setting", name)
		}
	}
}

// The settings a run does not use are not compared: compression with one
// part, the batch size without a sampler.
func TestTrajectoryIgnoresUnusedSettings(t *testing.T) {
	a := coraSpec(t)
	b := a
	b.Codec, b.Schedule, b.Partition, b.BatchSize = "topk", "fixed:4", "stream", 7
	in := &input{name: "cora", split: "public"}
	if ra, rb := a.trajectory(in, a.Schedule), b.trajectory(in, b.Schedule); !maps.Equal(ra, rb) {
		t.Fatalf("unused settings change the record:\n%v\n%v", ra, rb)
	}
}

// A setting no flag sets (a recipe's weight decay on the first layer only)
// is compared like the others, and named as the recipe's.
func TestResumeComparesRecipeSettings(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), checkpointSpec(t, dir, 2)); err != nil {
		t.Fatal(err)
	}
	r := checkpointSpec(t, dir, 2)
	r.Resume, r.Train.DecayFirstLayerOnly = dir, false
	_, err := Run(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "weight-decay-scope first-layer (now all) (the recipe's)") {
		t.Fatalf("resuming with weight decay on all layers: %v", err)
	}
	r.Train.DecayFirstLayerOnly, r.Train.Optimizer.Schedule = true, nn.StepDecay{StepSize: 10, Gamma: 0.5}
	if _, err := Run(context.Background(), r); err == nil || !strings.Contains(err.Error(), "lr-schedule") {
		t.Fatalf("resuming with a learning-rate schedule: %v", err)
	}
}

// fieldByPath returns the field of v at a dotted path, or the zero Value.
func fieldByPath(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		if v = v.FieldByName(name); !v.IsValid() {
			return v
		}
	}
	return v
}

// perturb changes v to another value of its type, reporting whether it
// could.
func perturb(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 3)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 0.125)
	case reflect.Interface:
		if v.Type() != reflect.TypeFor[nn.Schedule]() {
			return false
		}
		v.Set(reflect.ValueOf(nn.Cosine{Steps: 100}))
	default:
		return false
	}
	return true
}

// A checkpoint of an older graft, which recorded fewer settings and some
// only when set, still resumes: what it recorded is compared, what it did
// not is said to be not compared.
func TestResumeFromAnOlderRecord(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), checkpointSpec(t, dir, 2)); err != nil {
		t.Fatal(err)
	}
	st, _, err := checkpoint.LoadLatest(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]string{} // what such a checkpoint of a one-part full-graph run recorded
	for _, k := range []string{"dataset", "split", "features", "model", "layers", "hidden", "heads", "dropout", "normalize",
		"seed", "optimizer", "lr", "weight-decay", "select", "patience", "epochs", "eval-every", "accumulate", "parts",
		"lcc", "row-normalize"} {
		old[k] = st.Config[k]
	}
	st.Config = old
	if _, err := checkpoint.Save(dir, st, 0); err != nil {
		t.Fatal(err)
	}
	r := checkpointSpec(t, dir, 3)
	r.Resume, r.ResumeAllow, r.Train.Optimizer.LR = dir, []string{"epochs"}, 0.5
	if _, err := Run(context.Background(), r); err == nil || !strings.Contains(err.Error(), "--lr") {
		t.Fatalf("resuming with another --lr: %v", err)
	}
	r = checkpointSpec(t, dir, 3)
	var log bytes.Buffer
	r.Resume, r.ResumeAllow, r.Log = dir, []string{"epochs"}, &log
	if sum, err := Run(context.Background(), r); err != nil || sum.Epochs != 3 {
		t.Fatalf("resuming from an older record: %+v, %v", sum, err)
	}
	if !strings.Contains(log.String(), "does not record") || !strings.Contains(log.String(), "activation") {
		t.Errorf("the log does not say what was not compared:\n%s", log.String())
	}
}

// The data's identity changes with its content under the same name (a
// label, a split row, an edge, a feature), not with the features' storage.
func TestDataIdentity(t *testing.T) {
	s := coraSpec(t)
	in, err := s.load()
	if err != nil {
		t.Fatal(err)
	}
	was := dataIdentity(in)
	if !strings.HasPrefix(was, "2708 nodes, ") || dataIdentity(in) != was {
		t.Fatalf("identity %q, then %q", was, dataIdentity(in))
	}
	p := in.problem
	if !p.Features.IsSparse() {
		t.Fatal("Cora's features are expected sparse under auto")
	}
	dense := *in
	dense.problem.Features = nn.DenseFeatures(p.Features.Sparse.Dense())
	if got := dataIdentity(&dense); got != was {
		t.Errorf("the same features stored dense: identity %q, sparse %q", got, was)
	}
	for name, edit := range map[string]func(*input){
		"a label":     func(c *input) { c.problem.Labels = slices.Clone(p.Labels); c.problem.Labels[5]++ },
		"a split row": func(c *input) { c.problem.Val = slices.Clone(p.Val); c.problem.Val[0] = p.Test[0] },
		"a neighbour": func(c *input) {
			g := *p.Graph
			g.Neighbors = slices.Clone(g.Neighbors)
			g.Neighbors[0]++
			c.problem.Graph = &g
		},
		"an edge": func(c *input) {
			g := *p.Graph
			g.Offsets = slices.Clone(g.Offsets)
			g.Offsets[1]++
			c.problem.Graph = &g
		},
		"a feature": func(c *input) {
			x := p.Features.Sparse.Dense()
			x.Data[3] += 1
			c.problem.Features = nn.DenseFeatures(x)
		},
	} {
		c := *in
		edit(&c)
		if dataIdentity(&c) == was {
			t.Errorf("changing %s leaves the data's identity as it was", name)
		}
	}
}

// Spec-valued settings are compared as what they parse to, not as typed:
// a resume that writes --grad-compress's options in another order, or a
// codec's default fields out, continues the run, and so does one from a
// checkpoint that recorded them as typed; another value is still refused.
func TestResumeComparesSpecsAsParsed(t *testing.T) {
	dir := t.TempDir()
	a := checkpointSpec(t, dir, 2)
	a.Parts, a.GradCompress, a.Codec, a.EvalCodec = 2, "topk:0.1,noef,scaled", "delta", "entropy"
	if _, err := Run(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	resume := func(epochs int, grad, codec, eval string) error {
		r := checkpointSpec(t, dir, epochs)
		r.Parts, r.GradCompress, r.Codec, r.EvalCodec = 2, grad, codec, eval
		r.Resume, r.ResumeAllow = dir, []string{"epochs"}
		_, err := Run(context.Background(), r)
		return err
	}
	if err := resume(3, "topk:0.10,scaled,noef", "delta:4:0:0", "entropy:none"); err != nil {
		t.Fatalf("resuming with the same settings spelt otherwise: %v", err)
	}
	if err := resume(4, "topk:0.1,scaled", "delta:4", "entropy"); err == nil || !strings.Contains(err.Error(), "--grad-compress") {
		t.Fatalf("resuming with error feedback on: %v", err)
	}
	if err := resume(4, "topk:0.1,scaled,noef", "delta:2", "entropy"); err == nil || !strings.Contains(err.Error(), "--compress") {
		t.Fatalf("resuming with 2-bit delta coding: %v", err)
	}
	// A checkpoint that recorded the specs as they were typed.
	st, _, err := checkpoint.LoadLatest(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Config["grad-compress"], st.Config["compress"], st.Config["eval-compress"] = "topk:0.1,noef,scaled", "delta:4", "entropy"
	if _, err := checkpoint.Save(dir, st, 0); err != nil {
		t.Fatal(err)
	}
	if err := resume(4, "topk:0.1,scaled,noef", "delta", "entropy:none"); err != nil {
		t.Fatalf("resuming a checkpoint that recorded the specs as typed: %v", err)
	}
	// A new run in that directory is told it can continue the run there,
	// whichever way either spelt the specs.
	st, _, err = checkpoint.LoadLatest(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Config["grad-compress"], st.Config["compress"], st.Config["eval-compress"] = "topk:0.1,noef,scaled", "delta:4", "entropy"
	if _, err := checkpoint.Save(dir, st, 0); err != nil {
		t.Fatal(err)
	}
	fresh := checkpointSpec(t, dir, 4)
	fresh.Parts, fresh.GradCompress, fresh.Codec, fresh.EvalCodec = 2, "topk:0.10,scaled,noef", "delta:4:0:0", "entropy:none"
	if _, err := Run(context.Background(), fresh); err == nil || !strings.Contains(err.Error(), "(that run has this one's settings)") {
		t.Fatalf("a new run with the settings, spelt otherwise, of the run in its directory: %v", err)
	}
}
