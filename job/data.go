package job

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/launch"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// input is what a job trains on: the whole problem with its layout, or
// (with a part directory) the stored parts' manifest.
type input struct {
	name, split string
	splitSeed   uint64 // the seed the split was resolved with
	classes     int
	classNames  []string // the classes' names, as the labels named them
	sparse      bool
	problem     train.Problem
	layout      *partition.Layout
	memory      memacct.Marker // the run's start, for its memory account
	manifest    *partstore.Manifest
	mapped      *dataset.FeatureMap // the features' file, when mapped
	mappedSum   *MappedSummary
	// partFeatures and partGraph are the bytes of the parts this process
	// holds that problem and layout do not (holdPart; atomic).
	partFeatures, partGraph int64
	// cut is how many ranks of this process have cut their part from
	// problem (partCut; atomic).
	cut int64
}

// load reads the dataset and splits it (every worker of a job computes the
// same partition from the same seeds), or reads the part directory's
// manifest.
func (s *Spec) load() (*input, error) {
	mark := memacct.Mark()
	in, err := s.loadInput()
	if in != nil {
		in.memory = mark
	}
	return in, err
}

// loadInput is load without the memory mark.
func (s *Spec) loadInput() (*input, error) {
	if s.PartDir != "" {
		return s.loadPartDir()
	}
	ds, err := dataset.LoadWith(s.Dataset, s.DataDir, s.Files)
	if err != nil {
		return nil, err
	}
	if ds.EdgeListHeader != "" && s.Place.Rank == 0 {
		fmt.Fprintf(s.Log, "graft train: the first line of %s, %q, was read as a header naming its columns, not as an edge\n", ds.Name, ds.EdgeListHeader)
	}
	if s.LCC {
		if ds, err = ds.LargestComponent(); err != nil {
			return nil, err
		}
	}
	if err := s.checkMapped(ds); err != nil {
		return nil, err
	}
	split, err := ds.Split(s.Split, s.Train.Model.Seed)
	if err != nil {
		return nil, splitError(s.Split, err)
	}
	if (s.Split == "" || s.Split == "auto") && s.Place.Rank == 0 {
		fmt.Fprintf(s.Log, "graft train: split %s\n", describeAutoSplit(ds.Name, split.Name, s.Train.Model.Seed))
	}
	if s.Place.Rank == 0 {
		if len(split.Val) == 0 {
			fmt.Fprintf(s.Log, "graft train: split %s has no validation nodes: the run keeps its last epoch, and patience does not stop it\n", split.Name)
		}
		if len(split.Test) == 0 {
			fmt.Fprintf(s.Log, "graft train: split %s has no test nodes: the test metrics are 0\n", split.Name)
		}
		if ds.NumFeatures() == 0 && ds.Mapped == nil {
			fmt.Fprintf(s.Log, "graft train: %s has no node features: every node's input is the constant 1, so the model learns from the graph's structure alone (give them with --features FILE)\n", ds.Name)
		}
	}
	data, err := s.trainData(ds, split)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", ds.Name, err)
	}
	in := &input{name: ds.Name, split: split.Name, splitSeed: s.Train.Model.Seed, classes: ds.NumClasses, classNames: ds.ClassNames, sparse: data.Features.Sparse != nil,
		problem: train.Problem{Graph: ds.Graph, Features: data.Features, Labels: data.Labels, Train: data.Train, Val: data.Val, Test: data.Test}}
	in.useMapped(ds, s.Log)
	if in.layout, err = s.layout(ds.Graph, data.Train); err != nil {
		return nil, err
	}
	return in, nil
}

// describeAutoSplit says in a few words which split auto chose.
func describeAutoSplit(dataset, split string, seed uint64) string {
	if split == "public" {
		return fmt.Sprintf("public: the split %s ships (--split auto)", dataset)
	}
	return fmt.Sprintf("%s: stratified 60/20/20 per class with seed %d, as %s ships no split (--split auto)", split, seed, dataset)
}

func (s *Spec) loadPartDir() (*input, error) {
	m, err := partstore.ReadManifest(s.PartDir)
	if err != nil {
		return nil, err
	}
	secretFile := ""
	if s.Launch != nil {
		secretFile = s.Launch.SecretFile
	}
	secret, err := launch.OptionalSecret(secretFile, os.Getenv)
	if err != nil {
		return nil, err
	}
	if err := m.Verify(s.PartDir, secret); err != nil {
		return nil, err
	}
	switch {
	case !m.Authenticated() && launch.UserSecret(secretFile, os.Getenv):
		// A job secret of the user's authenticates the parts: a set without
		// its MAC may be one whose MAC was removed along with a change.
		return nil, fmt.Errorf("--part-dir %s is not authenticated (written without a job secret, or its MAC removed) but this job has one: write it again with the job secret set (graft partition --out %s), or train without GRAFT_TOKEN and --secret-file", s.PartDir, s.PartDir)
	case !m.Authenticated() && secret != nil && s.Place.Rank == 0:
		fmt.Fprintf(s.Log, "graft train: --part-dir %s is not authenticated (written without a job secret): its manifest and parts are checked against each other, but anyone who can write them could change both\n", s.PartDir)
	}
	switch {
	case s.Place.Size > 1 && m.Parts != s.Place.Size:
		return nil, specError(fmt.Errorf("--part-dir %s holds %d parts but the job has %d workers", s.PartDir, m.Parts, s.Place.Size))
	case s.Parts != 0 && m.Parts != s.Parts:
		return nil, specError(fmt.Errorf("--parts %d: --part-dir %s holds %d parts", s.Parts, s.PartDir, m.Parts))
	}
	s.Parts, s.Partition = m.Parts, "part-dir:"+m.Method
	return &input{name: m.Dataset, split: m.Split, classes: m.Classes, sparse: m.Sparse, manifest: m}, nil
}

// layout splits g into s.Parts parts; nil for one part.
func (s *Spec) layout(g *graph.Graph, trainRows []int32) (*partition.Layout, error) {
	if s.Parts > g.N {
		return nil, specError(fmt.Errorf("--parts %d: the graph has only %d nodes", s.Parts, g.N))
	}
	if s.Parts <= 1 {
		return nil, nil
	}
	parts, err := s.assign(g, trainRows)
	if err != nil {
		return nil, err
	}
	return partition.BuildLayout(g, parts, s.Parts)
}

func (s *Spec) assign(g *graph.Graph, trainRows []int32) ([]int32, error) {
	if slices.Contains(partition.Methods(), s.Partition) || s.Partition == "metis" {
		p, err := partition.New(s.Partition)
		if err != nil {
			return nil, err
		}
		// Balance training nodes too, as DGL's balance_ntypes does, so every
		// worker has a similar share of the loss.
		balance := make([]int32, g.N)
		for _, v := range trainRows {
			balance[v] = 1
		}
		return p.Partition(g, s.Parts, partition.Options{Seed: s.PartitionSeed, Balance: balance})
	}
	f, err := os.Open(s.Partition)
	if err != nil {
		return nil, specError(fmt.Errorf("--partition %q is neither a method (%s) nor a readable assignment file", s.Partition, strings.Join(partition.Methods(), ", ")))
	}
	defer f.Close()
	parts, _, err := partition.ReadAssignment(f, g.N, s.Parts)
	if err != nil {
		return nil, fmt.Errorf("assignment %s: %v", s.Partition, err)
	}
	return parts, nil
}

// compression returns the run options of the codec, schedule and link, and
// the schedule's name.
func (s *Spec) compression() (fullgraph.Options, string, error) {
	var opts fullgraph.Options
	if err := s.resolveAuto(); err != nil {
		return opts, "", err
	}
	codec := s.Codec
	if codec == "" || codec == compress.Auto { // auto: one worker, nothing to compress
		codec = "none"
	}
	newCodec, err := compress.Factory(codec)
	if err != nil {
		return opts, "", specError(fmt.Errorf("--compress: %v", err))
	}
	spec := s.Schedule
	if spec == "" {
		spec = compress.DefaultSchedule(codec)
	}
	sched, err := compress.ParseSchedule(spec, s.Train.Epochs)
	if err != nil {
		return opts, "", specError(err)
	}
	opts.Codec = newCodec
	opts.Schedule, _ = compress.ScheduleFactory(spec, s.Train.Epochs)
	if opts.Grad, err = s.gradCompression(); err != nil {
		return opts, "", err
	}
	opts.CompressLast = s.CompressLast
	if opts.EvalCodec, err = s.evalCompression(); err != nil {
		return opts, "", err
	}
	if _, watches := sched.(compress.Observer); watches && opts.EvalCodec != nil {
		return opts, "", specError(fmt.Errorf("--eval-compress with --schedule %s: the schedule follows the validation loss, which compressed evaluations would change, and the training with it; give a schedule of the epoch, or drop --eval-compress", spec))
	}
	opts.Precision = train.Precision(s.Precision)
	if s.Link != "" {
		l, err := comm.ParseLink(s.Link)
		if err != nil {
			return opts, "", specError(fmt.Errorf("--link: %v", err))
		}
		opts.Link = &l
	}
	return opts, sched.String(), nil
}

// resolveAuto replaces --compress auto, and a request for compression that
// names no codec (--schedule or --compress-last over several parts of
// full-graph training), with the codec auto stands for, and sets
// CompressLast with it.
func (s *Spec) resolveAuto() error {
	asked := s.Codec == "" && s.Parts > 1 && s.Sampler == "" && (s.Schedule != "" || s.CompressLast)
	if s.Codec != compress.Auto && !asked || s.Parts <= 1 && s.Place.Size <= 1 {
		return nil // with one worker auto stays named, for the note that it does nothing
	}
	if s.Sampler != "" {
		return specError(errors.New("--compress auto is the recipe for the halo exchange of full-graph training over parts; the feature rows of sampled training take a codec by name (quant8, quant4, ...)"))
	}
	s.Codec, s.CompressLast = compress.AutoCodec(s.Schedule != ""), true
	if s.Place.Rank == 0 && s.Parts > 1 {
		fmt.Fprintf(s.Log, "graft train: --compress auto: %s with --compress-last (docs/delta.md)\n", s.Codec)
	}
	return nil
}

// evalCompression checks --eval-compress and returns the maker of each
// worker's codec of the evaluation passes, nil for none.
func (s *Spec) evalCompression() (func() compress.Compressor, error) {
	if s.EvalCodec == "" || s.EvalCodec == "none" {
		return nil, nil
	}
	if s.Sampler != "" || s.Async != nil || s.Pipeline != nil {
		return nil, specError(errors.New("--eval-compress compresses the halo exchange of full-graph evaluation over parts; sampled, asynchronous and pipelined runs exchange no halo rows to evaluate: drop it"))
	}
	make, err := compress.Factory(s.EvalCodec)
	if err != nil {
		return nil, specError(fmt.Errorf("--eval-compress: %v", err))
	}
	if caps := make().Caps(); caps.Streaming != nil || caps.Grad != nil {
		return nil, specError(fmt.Errorf("--eval-compress %s: a codec that keeps state between messages cannot compress evaluation; give a quantiser (quant8, entropy:quant8)", s.EvalCodec))
	}
	if s.Parts <= 1 { // nothing to exchange (said by unusedWithOneWorker)
		return nil, nil
	}
	return make, nil
}

// evalCodecInUse is --eval-compress where it compresses the evaluations,
// "" elsewhere (the summary's eval_compress).
func (s *Spec) evalCodecInUse() string {
	if codec, err := s.evalCompression(); err != nil || codec == nil {
		return ""
	}
	return s.EvalCodec
}

// gradCompression checks the gradient compression and returns the maker of
// each worker's. Top-k with error feedback takes over the momentum of SGD
// (Deep Gradient Compression's momentum correction), and the optimiser
// then steps without its own; Nesterov momentum stays with the optimiser.
func (s *Spec) gradCompression() (func() (gradcomp.Method, error), error) {
	spec := s.GradCompress
	if spec == "" || spec == "none" {
		return nil, nil
	}
	o := s.gradOptions()
	m, err := gradcomp.New(spec, o)
	if err != nil {
		return nil, specError(fmt.Errorf("--grad-compress: %v", err))
	}
	if s.Parts <= 1 { // nothing to reduce (said by unusedWithOneWorker)
		return nil, nil
	}
	if gradcomp.MomentumOf(m) > 0 {
		s.Train.Optimizer.Momentum = 0
	}
	s.Train.Optimizer.CatchUp = gradcomp.IsDelayed(m)
	return func() (gradcomp.Method, error) { return gradcomp.New(spec, o) }, nil
}

// gradOptions are the options of the run's gradient compression.
func (s *Spec) gradOptions() gradcomp.Options {
	o := gradcomp.Options{Seed: s.Train.Model.Seed}
	if opt := s.Train.Optimizer; opt.Algorithm == nn.SGD && !opt.Nesterov {
		o.Momentum = opt.Momentum
	}
	return o
}

// unusedWithOneWorker says which communication settings a job was given
// that do nothing in it, or returns "": those of a job of one part, where
// nothing crosses a boundary, and --link in a parameter-server or
// pipelined run, which emulates no link. (Those runs refuse the other
// settings: checkAsync, checkPipeline, evalCompression.)
func (s *Spec) unusedWithOneWorker() string {
	if s.Async != nil || s.Pipeline != nil {
		if s.Link == "" {
			return ""
		}
		mode := "--mode pipeline"
		switch {
		case s.Async != nil && s.Async.Sync:
			mode = "--mode ps-sync"
		case s.Async != nil:
			mode = "--mode async"
		}
		return fmt.Sprintf("--link %s has no effect with %s: it emulates the links between the parts of --mode sync training over --parts N", s.Link, mode)
	}
	if s.Parts != 1 {
		return ""
	}
	var set []string
	if s.Codec != "" && s.Codec != "none" {
		set = append(set, "--compress "+s.Codec)
	}
	if s.Schedule != "" {
		set = append(set, "--schedule "+s.Schedule)
	}
	if s.Link != "" {
		set = append(set, "--link "+s.Link)
	}
	if s.GradCompress != "" && s.GradCompress != "none" {
		set = append(set, "--grad-compress "+s.GradCompress)
	}
	if s.CompressLast {
		set = append(set, "--compress-last")
	}
	if s.EvalCodec != "" && s.EvalCodec != "none" {
		set = append(set, "--eval-compress "+s.EvalCodec)
	}
	switch len(set) {
	case 0:
		return ""
	case 1:
		return set[0] + " has no effect with one worker: nothing crosses a boundary (add --parts N)"
	}
	named := strings.Join(set[:len(set)-1], ", ") + " and " + set[len(set)-1]
	return named + " have no effect with one worker: nothing crosses a boundary (add --parts N)"
}
