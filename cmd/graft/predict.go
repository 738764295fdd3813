package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/job"
	"github.com/graft-gnn/graft/tensor"
)

func init() {
	commands["predict"] = command{"write per-node predictions and class probabilities of a model saved by train --save", runPredict}
}

// savedFlags are the flags that graft predict and graft evaluate share:
// the model file and the data to run it on.
type savedFlags struct {
	modelFile, dataset, dataDir string
	rows                        string // all, train, val or test
	spec                        string // a split specification given to --split instead
	seed                        uint64
	files                       dataset.NodeFiles // --labels and --features
}

func (f *savedFlags) register(fs *flag.FlagSet, rowsHelp string) {
	fs.StringVar(&f.modelFile, "model-file", "", "the model: a `FILE` written by graft train --save (either --save-format); required")
	fs.StringVar(&f.dataset, "dataset", "", "dataset name or path (default: the one the model was trained on, as its file records)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory for named datasets (default $"+dataset.DataDirEnv+")")
	fs.StringVar(&f.rows, "split", "all", rowsHelp+"; or a split `SPEC` as graft train takes (public, random:T:V, frac:T:V, file:PATH[:K], …) to use instead of the training run's split, which the model file records with its seed")
	registerNodeFiles(fs, &f.files, nil)
	fs.Uint64Var(&f.seed, "seed", 1, "seed of a random split given as --split SPEC (the training run's split keeps its own)")
}

// load reads the model file and prepares its dataset as the training run
// did; a note about settings the file does not record goes to stderr.
func (f *savedFlags) load(fs *flag.FlagSet, stderr io.Writer) (*job.Saved, *job.Input, error) {
	if fs.NArg() > 0 {
		return nil, nil, usageError{fmt.Errorf("unexpected argument %q; all settings are flags (see 'graft %s -h')", fs.Arg(0), fs.Name())}
	}
	if f.modelFile == "" {
		return nil, nil, usageError{fmt.Errorf("--model-file is required: a file written by graft train --save (see 'graft %s -h')", fs.Name())}
	}
	if !slices.Contains(rowSets, f.rows) {
		f.spec, f.rows = f.rows, "all"
	}
	if flagSet(fs, "seed") && f.spec == "" {
		return nil, nil, usageError{errors.New("--seed seeds a random split given as --split SPEC; the training run's split keeps the seed its file records")}
	}
	saved, err := job.LoadSaved(f.modelFile)
	if err != nil {
		return nil, nil, err
	}
	info := &saved.Info
	if note := info.AssumedNote(); note != "" {
		fmt.Fprintf(stderr, "graft %s: %s\n", fs.Name(), note)
	}
	source, files := f.dataset, f.files
	if files.Labels == "" && files.Features == "" && (source == "" || job.RecordedPath(source) == info.Source) {
		files.Labels, files.Features = info.Files.Labels, info.Files.Features // the run's own labels and features files
	}
	recorded := source == ""
	if recorded {
		source = info.Source
		if source == "" {
			source = info.Dataset
		}
	}
	spec, seed := f.spec, f.seed
	if spec == "" && f.rows == "all" && fs.Name() == "predict" {
		spec = "none" // every node, labelled or not: no split needed
	}
	if err := recordedFilesExist(f.modelFile, source, recorded, files, info.Files); err != nil {
		return nil, nil, err
	}
	in, err := saved.Prepare(source, f.dataDir, files, spec, seed)
	if err != nil {
		return nil, nil, err
	}
	return saved, in, nil
}

// recordedFilesExist checks that the files a model file records, of those
// graft predict or evaluate is about to read (the dataset when recorded,
// the labels and features when the run's own), are still there: a model
// moved to another machine, or files moved since, are then named with the
// flags that say where they are now.
func recordedFilesExist(modelFile, source string, recorded bool, files, run dataset.NodeFiles) error {
	check := []struct{ path, what, flag string }{
		{files.Labels, "labels", "--labels"}, {files.Features, "features", "--features"},
	}
	if recorded && !dataset.IsSynthetic(source) && !slices.Contains(dataset.KnownNames(), source) {
		check = append([]struct{ path, what, flag string }{{source, "dataset", "--dataset"}}, check...)
	}
	for _, c := range check {
		if c.path == "" || c.what != "dataset" && c.path != run.Labels && c.path != run.Features {
			continue
		}
		if _, err := os.Stat(c.path); errors.Is(err, os.ErrNotExist) {
			err := fmt.Errorf("%s: the run read its %s from %s, which is not there (moved?); say where it is with %s PATH", modelFile, c.what, c.path, c.flag)
			if c.what == "dataset" && (run.Labels != "" || run.Features != "") {
				err = fmt.Errorf("%v, and its node files with --labels and --features (the run read %s)", err, strings.Join(slices.DeleteFunc([]string{run.Labels, run.Features}, func(p string) bool { return p == "" }), " and "))
			}
			return err
		}
	}
	return nil
}

// rowSets are the values of --split that pick rows of the training run's
// split; any other value is a split specification.
var rowSets = []string{"all", "train", "val", "test"}

// selectedRows returns the nodes of rows (all, train, val or test) in
// ascending order.
func selectedRows(in *job.Input, rows string) []int32 {
	var sel []int32
	switch rows {
	case "all":
		sel = make([]int32, in.Dataset.NumNodes())
		for i := range sel {
			sel[i] = int32(i)
		}
		return sel
	case "train":
		sel = in.Split.Train
	case "val":
		sel = in.Split.Val
	case "test":
		sel = in.Split.Test
	}
	sel = slices.Clone(sel)
	slices.Sort(sel)
	return sel
}

// nodeID is node i's source id as a CSV field (csvField).
func nodeID(ds *dataset.Dataset, i int32) string {
	return csvField(ds.NodeID(int(i)))
}

// csvField is s as a CSV field: in double quotes (a quote within doubled)
// when it holds a comma, a quote, a line break or blanks at its ends, as
// CSV readers and graft's own read it back.
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\r\n") || strings.TrimSpace(s) != s {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

const predictUsage = `usage: graft predict --model-file FILE [--dataset NAME|PATH] [--split all|train|val|test|SPEC] [--out FILE.csv|FILE.npy]

Runs a model saved by 'graft train --save' on every node of its dataset,
prepared as the training run prepared it (the model file records the
architecture, the split with its seed, --lcc, --row-normalize and the
feature storage), and writes one row per node of --split:

  .csv (and stdout): node,pred,p0,p1,...  the node's id, the predicted
        class (the most probable) and the probability of every class; when
        the training run's labels named the classes, a last column, class,
        holds the predicted class's name
  .npy: an N×C float32 array of the probabilities only, one row per node
        in ascending id order (all nodes with --split all); the predicted
        class of a row is its argmax

When the dataset's source named its nodes with ids of its own (strings,
sparse integers, paper ids), the node column holds them, and FILE's
node_ids.csv beside it (preds.node_ids.csv for --out preds.npy) maps each
row of the output to its node's id.

Flags:
`

func runPredict(args []string, stdout, stderr io.Writer) error {
	var f savedFlags
	var out string
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	f.register(fs, "the nodes to write: all (every node, labelled or not), or the training run's train, val or test set")
	fs.StringVar(&out, "out", "", "write to `FILE`: .csv (node,pred,p0,p1,...[,class]) or .npy (N×C float32 probabilities); default CSV on stdout")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), predictUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	ext := strings.ToLower(filepath.Ext(out))
	if out != "" && ext != ".csv" && ext != ".npy" {
		return usageError{fmt.Errorf("--out %s: want a .csv or .npy file", out)}
	}
	saved, in, err := f.load(fs, stderr)
	if err != nil {
		return err
	}
	logits := saved.Logits(in)
	probs := tensor.New(logits.Rows, logits.Cols)
	tensor.Softmax(probs, logits)
	pred := make([]int, logits.Rows)
	for i := range pred {
		pred[i] = tensor.Argmax(logits.Row(i)) // of the logits, as accuracy counts: probabilities may round to ties
	}
	rows := selectedRows(in, f.rows)
	if out == "" {
		return writePredictionsCSV(stdout, in.Dataset, pred, probs, rows, saved.Info.ClassNames)
	}
	file, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(file)
	if ext == ".npy" {
		err = writeProbabilitiesNPY(w, probs, rows)
	} else {
		err = writePredictionsCSV(w, in.Dataset, pred, probs, rows, saved.Info.ClassNames)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %v", out, err)
	}
	fmt.Fprintf(stderr, "graft predict: wrote %d nodes' predictions to %s\n", len(rows), out)
	if in.Dataset.NodeIDs != nil {
		ids := strings.TrimSuffix(out, filepath.Ext(out)) + ".node_ids.csv"
		if err := writeNodeIDs(ids, in.Dataset, rows); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "graft predict: wrote the rows' node ids to %s\n", ids)
	}
	return nil
}

// writeNodeIDs writes row,node for every row of the predictions: the id
// the dataset's source gave the node that graft numbered rows[row].
func writeNodeIDs(path string, ds *dataset.Dataset, rows []int32) error {
	var b strings.Builder
	b.WriteString("row,node\n")
	for j, r := range rows {
		fmt.Fprintf(&b, "%d,%s\n", j, nodeID(ds, r))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the node ids: %v", err)
	}
	return nil
}

// writePredictionsCSV writes node,pred,p0,p1,... for every node of rows:
// its id, its predicted class and its class probabilities, and, when the
// training run's labels named the classes (names), the predicted class's
// name in a last column, class.
func writePredictionsCSV(w io.Writer, ds *dataset.Dataset, pred []int, probs *tensor.Matrix, rows []int32, names []string) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("node,pred")
	for c := range probs.Cols {
		fmt.Fprintf(bw, ",p%d", c)
	}
	if names != nil {
		bw.WriteString(",class")
	}
	bw.WriteByte('\n')
	var num []byte
	for _, r := range rows {
		p := probs.Row(int(r))
		bw.WriteString(nodeID(ds, r))
		bw.WriteByte(',')
		bw.WriteString(strconv.Itoa(pred[r]))
		for _, v := range p {
			bw.WriteByte(',')
			num = strconv.AppendFloat(num[:0], float64(v), 'g', -1, 32)
			bw.Write(num)
		}
		if names != nil {
			bw.WriteByte(',')
			bw.WriteString(csvField(names[pred[r]]))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeProbabilitiesNPY writes the probabilities of rows as a float32
// array of one row per node.
func writeProbabilitiesNPY(w io.Writer, probs *tensor.Matrix, rows []int32) error {
	data := make([]float32, 0, len(rows)*probs.Cols)
	for _, r := range rows {
		data = append(data, probs.Row(int(r))...)
	}
	return dataset.WriteNPYFloat32(w, []int{len(rows), probs.Cols}, data)
}
