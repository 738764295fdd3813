package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/atomicfile"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/launch"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/train/fullgraph"
)

func init() {
	commands["partition"] = command{"split a graph into parts and report their quality", runPartition}
}

const partitionUsage = `usage: graft partition --dataset X --parts K [--method random|stream|multilevel|metis]
                       [--balance train] [--seed S] [--out FILE|DIR/] [--json]
       graft partition --dataset X --assign FILE [--parts K] [--json]
       graft partition --dataset X --write-metis-graph FILE [--balance train]

X is a dataset name or path (see graft data) or rmat:SCALE:EDGES[:SEED] for a
generated R-MAT graph. Directed graphs are symmetrised first. The assignment
file has one part id per line, as gpmetis writes it.

--out DIR/ (a trailing slash or an existing directory) writes one directory
per part for 'graft train --part-dir DIR': its local graph, feature rows
(row-normalised, stored as graft train's --features auto would), labels and
split rows (--split, seed --seed), send lists and halo degrees, plus
manifest.json and the assignment (DIR/assignment.txt).`

// partitionResult is what --json prints: the quality report plus the run.
type partitionResult struct {
	Dataset      string  `json:"dataset"`
	Method       string  `json:"method"`
	Seed         uint64  `json:"seed"`
	Seconds      float64 `json:"seconds"`
	CPUSeconds   float64 `json:"cpu_seconds"` // user+system time of the partitioning, all threads
	LoadSeconds  float64 `json:"load_seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	*partition.Report
}

// partitionMemoryLimit is the soft heap limit graft partition runs under.
const partitionMemoryLimit = 4 << 30

// partitionFlags is what graft partition was asked to do.
type partitionFlags struct {
	name, dataDir, split string
	files                dataset.NodeFiles
	seed                 uint64
	k                    int
	method, balance      string
	imbalance            float64
	out, assign          string
	metisGraph           string
	secretFile           string
	asJSON               bool
}

func runPartition(args []string, stdout, stderr io.Writer) error {
	f, err := parsePartitionFlags(args, stderr)
	if err != nil {
		return err
	}
	if err := f.checkOutputs(); err != nil {
		return err
	}
	// Partitioning frees large coarse graphs as it goes; a soft limit makes
	// the collector return them before the heap doubles (GOMEMLIMIT wins).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(partitionMemoryLimit)
	}
	loadStart := time.Now()
	g, train, err := loadPartitionGraph(f.name, f.dataDir, f.files, f.split, f.seed, f.balance == "train")
	if err != nil {
		return err
	}
	res := partitionResult{Dataset: f.name, Method: f.method, Seed: f.seed, LoadSeconds: time.Since(loadStart).Seconds()}
	var balanceWeights []int32
	if f.balance == "train" {
		balanceWeights = trainWeights(train, g.N)
	}
	if f.metisGraph != "" {
		if err := writeMETISInput(f.metisGraph, g, balanceWeights); err != nil {
			return err
		}
		if f.assign == "" && f.k <= 0 {
			return nil
		}
	}
	parts, k, err := f.assignParts(g, balanceWeights, &res)
	if err != nil {
		return err
	}
	if res.Report, err = partition.Evaluate(g, parts, k, train); err != nil {
		return err
	}
	res.PeakRSSBytes = sysstat.PeakRSS()
	if err := f.writeOut(parts, k, res.Method); err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	printPartitionReport(stdout, res)
	if res.EmptyParts > 0 {
		fmt.Fprintf(stderr, "graft partition: warning: %d of %d parts are empty\n", res.EmptyParts, res.K)
	}
	return nil
}

func parsePartitionFlags(args []string, stderr io.Writer) (*partitionFlags, error) {
	fs := newFlagSet("partition")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), partitionUsage)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	f := &partitionFlags{}
	fs.StringVar(&f.name, "dataset", "", "dataset name or path, or rmat:SCALE:EDGES[:SEED]")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory (default $GRAFT_DATA)")
	registerNodeFiles(fs, &f.files, nil)
	fs.IntVar(&f.k, "parts", 0, "number of parts K")
	fs.StringVar(&f.method, "method", "multilevel", "partitioner: "+strings.Join(append(partition.Methods(), "metis"), ", "))
	fs.StringVar(&f.balance, "balance", "", "second balance constraint: train (the split's training nodes)")
	fs.StringVar(&f.split, "split", "auto", "split whose training nodes --balance train and the report use, stored with --out (auto: the dataset's own, else a seeded stratified "+dataset.AutoStratified+")")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.Float64Var(&f.imbalance, "imbalance", partition.DefaultImbalance, "tolerated max/mean - 1 per constraint")
	fs.StringVar(&f.out, "out", "", "write the assignment here (one part id per line), or with a trailing slash one directory per part for graft train --part-dir")
	fs.StringVar(&f.assign, "assign", "", "report the quality of this assignment instead of partitioning")
	fs.StringVar(&f.metisGraph, "write-metis-graph", "", "write the graph in gpmetis's input format to this file")
	fs.StringVar(&f.secretFile, "secret-file", "", "authenticate the parts of --out DIR/ with the job secret in this file (default: GRAFT_TOKEN, if set)")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as one JSON object")
	if err := parseFlags(fs, args, stderr); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return f, f.check()
}

func (f *partitionFlags) check() error {
	if f.name == "" {
		return usageError{errors.New("--dataset is required")}
	}
	if f.balance != "" && f.balance != "train" {
		return usageError{fmt.Errorf("--balance %q: the only second constraint is train", f.balance)}
	}
	if !(f.imbalance > 0) {
		return usageError{fmt.Errorf("--imbalance %g: want a positive tolerance", f.imbalance)}
	}
	if f.assign == "" && f.metisGraph == "" && f.k <= 0 {
		return usageError{fmt.Errorf("--parts must be a positive part count, got %d", f.k)}
	}
	return nil
}

// checkOutputs refuses, before the graph is read, an output that could not
// be written once it is partitioned.
func (f *partitionFlags) checkOutputs() error {
	if f.metisGraph != "" {
		if err := atomicfile.CheckWritable(f.metisGraph); err != nil {
			return fmt.Errorf("--write-metis-graph %v", err)
		}
	}
	switch {
	case f.out == "":
	case isPartDirPath(f.out):
		if err := atomicfile.CheckWritableDir(f.out); err != nil {
			return fmt.Errorf("--out %v", err)
		}
	default:
		if err := atomicfile.CheckWritable(f.out); err != nil {
			return fmt.Errorf("--out %v", err)
		}
	}
	return nil
}

// trainWeights is the second balance constraint: one for each of the n
// nodes that train marks.
func trainWeights(train []bool, n int) []int32 {
	w := make([]int32, n)
	for v, t := range train {
		if t {
			w[v] = 1
		}
	}
	return w
}

// writeMETISInput writes g in gpmetis's input format, with two node weights
// (one each, and the balance weights) if there are balance weights.
func writeMETISInput(path string, g *graph.Graph, balanceWeights []int32) error {
	weights := [][]int32{}
	if balanceWeights != nil {
		ones := make([]int32, g.N)
		for i := range ones {
			ones[i] = 1
		}
		weights = append(weights, ones, balanceWeights)
	}
	return writeFile(path, func(w io.Writer) error { return partition.WriteMETISGraph(w, g, weights...) })
}

// assignParts returns every node's part and the part count: read from
// --assign, or computed by --method with its time recorded in res.
func (f *partitionFlags) assignParts(g *graph.Graph, balanceWeights []int32, res *partitionResult) ([]int32, int, error) {
	start, startCPU := time.Now(), sysstat.CPUTime()
	if f.assign != "" {
		res.Method = "file:" + f.assign
		return f.readAssignment(g.N)
	}
	p, err := partition.New(f.method)
	if err != nil {
		return nil, 0, usageError{err}
	}
	parts, err := p.Partition(g, f.k, partition.Options{Seed: f.seed, Balance: balanceWeights, Imbalance: f.imbalance})
	if err != nil {
		return nil, 0, err
	}
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = (sysstat.CPUTime() - startCPU).Seconds()
	return parts, f.k, nil
}

// readAssignment reads --assign for a graph of n nodes; without --parts
// the part count is the largest id plus one.
func (f *partitionFlags) readAssignment(n int) ([]int32, int, error) {
	file, err := os.Open(f.assign)
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	parts, k, err := partition.ReadAssignment(bufio.NewReader(file), n, max(f.k, 0))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", f.assign, err)
	}
	return parts, k, nil
}

// writeOut writes --out, if given: a directory per part, or the assignment.
func (f *partitionFlags) writeOut(parts []int32, k int, method string) error {
	switch {
	case f.out == "":
		return nil
	case isPartDirPath(f.out):
		return writePartDirs(f.out, f.name, f.dataDir, f.files, f.split, f.seed, parts, k, method, f.secretFile)
	}
	return writeFile(f.out, func(w io.Writer) error { return partition.WriteAssignment(w, parts) })
}

// loadPartitionGraph returns the undirected graph to partition and, when a
// split is wanted (or the dataset has a public one), its training nodes.
func loadPartitionGraph(name, dataDir string, files dataset.NodeFiles, split string, seed uint64, needTrain bool) (*graph.Graph, []bool, error) {
	if spec, ok := strings.CutPrefix(name, "rmat:"); ok {
		if needTrain {
			return nil, nil, usageError{errors.New("--balance train needs a dataset with labels; R-MAT graphs have none")}
		}
		g, err := rmatFromSpec(spec)
		return g, nil, err
	}
	d, err := dataset.LoadWith(name, dataDir, files)
	if err != nil {
		return nil, nil, err
	}
	g := d.Graph
	if !g.IsSymmetric() {
		g = g.Symmetrize()
	}
	var train []bool
	s, err := d.Split(split, seed)
	switch {
	case err == nil:
		train = make([]bool, g.N)
		for _, v := range s.Train {
			train[v] = true
		}
	case needTrain:
		return nil, nil, fmt.Errorf("--balance train: %w", err)
	}
	return g, train, nil
}

func rmatFromSpec(spec string) (*graph.Graph, error) {
	fields := strings.Split(spec, ":")
	if len(fields) < 2 || len(fields) > 3 {
		return nil, usageError{fmt.Errorf("rmat:%s: want rmat:SCALE:EDGES[:SEED]", spec)}
	}
	scale, err1 := strconv.Atoi(fields[0])
	edges, err2 := strconv.ParseInt(fields[1], 10, 64)
	seed := uint64(1)
	var err3 error
	if len(fields) == 3 {
		seed, err3 = strconv.ParseUint(fields[2], 10, 64)
	}
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, usageError{fmt.Errorf("rmat:%s: %v", spec, err)}
	}
	return graph.RMAT(scale, edges, graph.RMATA, graph.RMATB, graph.RMATC, seed)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func printPartitionReport(w io.Writer, r partitionResult) {
	fmt.Fprintf(w, "%s: %d nodes, %d edges; %s into %d parts", r.Dataset, r.Nodes, r.Edges, r.Method, r.K)
	if r.Seconds > 0 {
		fmt.Fprintf(w, " in %.3f s (%.3f s CPU)", r.Seconds, r.CPUSeconds)
	}
	fmt.Fprintf(w, " (peak RSS %.1f MiB)\n", float64(r.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(w, "edge cut %d (%.4f of edges), boundary nodes %d, rows exchanged per layer %d\n",
		r.EdgeCut, r.EdgeCutFraction, r.BoundaryNodes, r.CommRows)
	im := r.Imbalances
	fmt.Fprintf(w, "imbalance (max/mean): nodes %.3f, edges %.3f, train %.3f, boundary %.3f, halo %.3f, sent rows %.3f\n",
		im.Nodes, im.Edges, im.Train, im.Boundary, im.Halo, im.SendRows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "part\tnodes\tedges\tcut edges\ttrain\tboundary\thalo\tsent rows\t")
	for p, s := range r.Parts {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", p, s.Nodes, s.Edges, s.CutEdges, s.TrainNodes, s.BoundaryNodes, s.HaloNodes, s.SendRows)
	}
	tw.Flush()
}

// isPartDirPath reports whether graft partition --out names a directory of
// parts rather than an assignment file.
func isPartDirPath(path string) bool {
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(os.PathSeparator)) {
		return true
	}
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// writePartDirs stores the parts of assignment parts for graft train
// --part-dir, with the data prepared as graft train prepares it by default
// (row-normalised features, stored dense or sparse by density) and the
// split spec drawn with seed; with a job secret (GRAFT_TOKEN, or
// secretFile) the set is authenticated.
func writePartDirs(dir, name, dataDir string, files dataset.NodeFiles, splitSpec string, seed uint64, parts []int32, k int, method, secretFile string) error {
	if strings.HasPrefix(name, "rmat:") {
		return usageError{errors.New("--out DIR/: stored parts need a dataset with labels; R-MAT graphs have none")}
	}
	ds, err := dataset.LoadWith(name, dataDir, files)
	if err != nil {
		return err
	}
	split, err := ds.Split(splitSpec, seed)
	if err != nil {
		return fmt.Errorf("--out DIR/: %w", err)
	}
	data, err := fullgraph.FromDataset(ds, split, nn.Auto, true)
	if err != nil {
		return fmt.Errorf("dataset %s: %v", ds.Name, err)
	}
	layout, err := partition.BuildLayout(ds.Graph, parts, k)
	if err != nil {
		return err
	}
	src := partstore.Source{Graph: ds.Graph, Features: data.Features, Labels: data.Labels, Classes: ds.NumClasses, Split: split}
	m := partstore.Manifest{Dataset: ds.Name, Split: split.Name, Method: method}
	secret, err := launch.OptionalSecret(secretFile, os.Getenv)
	if err != nil {
		return err
	}
	if err := partstore.Write(dir, m, src, layout, secret); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	return writeFile(filepath.Join(dir, "assignment.txt"), func(w io.Writer) error { return partition.WriteAssignment(w, parts) })
}
