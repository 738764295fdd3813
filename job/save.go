package job

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/dataset"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

// saveModel writes the model's (best) parameters to s.Save in the layout
// s.SaveFormat names, with the ModelInfo that lets graft evaluate and
// predict reproduce the run.
func (s *Spec) saveModel(in *input, res train.Result, model *nn.Model) error {
	layout, err := nn.ParseLayout(s.SaveFormat)
	if err != nil {
		return specError(fmt.Errorf("--save-format: %v", err))
	}
	info := ModelInfo{
		Model: model.Config, Layout: layout,
		Dataset: in.name, Split: in.split, SplitSeed: in.splitSeed,
		LCC: s.LCC, RowNormalize: s.RowNormalize, Features: "dense",
		Epoch: res.Best.Epoch, TrainAcc: res.Best.TrainAcc, ValAcc: res.Best.ValAcc, TestAcc: res.Best.TestAcc,
	}
	info.BF16 = s.Precision == string(train.BF16) && s.Sampler == ""
	info.BF16Layers = s.Precision == string(train.BF16) && s.Sampler != ""
	info.EvalSampler = s.EvalSampler
	info.ClassNames = namedClasses(in.classNames)
	// Settings that only affect training say nothing about the model.
	info.Model.Dropout, info.Model.AttentionDropout, info.Model.Init = 0, 0, ""
	if in.sparse {
		info.Features = "sparse"
	}
	if in.manifest != nil {
		// graft partition --out prepares parts as graft train does by
		// default (the whole graph, row-normalised features); its
		// manifest does not record the split's seed.
		info.LCC, info.RowNormalize = false, true
		info.Nodes = in.manifest.Nodes
		info.Assumed = []string{"split_seed"}
	} else {
		info.Source = RecordedPath(s.Dataset)
		info.Files.Labels, info.Files.Features = RecordedPath(s.Files.Labels), RecordedPath(s.Files.Features)
		info.Split = recordedSplit(in.split)
		info.Nodes = in.problem.Graph.N
	}
	params, err := nn.Renamed(model.Params(), info.Model.Model, layout)
	if err != nil {
		return err
	}
	if err := nn.SaveParamsFile(s.Save, params, info.metadata()); err != nil {
		return fmt.Errorf("saving parameters: %v", err)
	}
	return nil
}

// RecordedPath is how a model file records a file or directory the run
// read: as an absolute path, so that graft predict and graft evaluate find
// it from any working directory. Dataset names (cora, sbm:…) and paths that
// do not exist are recorded as given.
func RecordedPath(p string) string {
	if p == "" || dataset.IsSynthetic(p) || slices.Contains(dataset.KnownNames(), p) {
		return p
	}
	if _, err := os.Stat(p); err != nil {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// recordedSplit is split with the file of a file:PATH[:K] split recorded
// as RecordedPath records it.
func recordedSplit(split string) string {
	rest, ok := strings.CutPrefix(split, "file:")
	if !ok {
		return split
	}
	if path := RecordedPath(rest); path != rest {
		return "file:" + path
	}
	if i := strings.LastIndexByte(rest, ':'); i > 0 {
		if _, err := strconv.Atoi(rest[i+1:]); err == nil {
			return "file:" + RecordedPath(rest[:i]) + rest[i:]
		}
	}
	return split
}

// namedClasses is names, the classes' names, unless they are the numbers
// 0, 1, … that a dataset of numbered classes gives them: then nil.
func namedClasses(names []string) []string {
	for c, name := range names {
		if name != strconv.Itoa(c) {
			return names
		}
	}
	return nil
}
