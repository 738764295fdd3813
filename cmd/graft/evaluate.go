package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/graft-gnn/graft/job"
)

func init() {
	commands["evaluate"] = command{"print the accuracies of a model saved by train --save on its split", runEvaluate}
}

const evaluateUsage = `usage: graft evaluate --model-file FILE [--dataset NAME|PATH] [--split all|train|val|test|SPEC] [--json]

Runs a model saved by 'graft train --save' on its dataset, prepared and
split as the training run did (the model file records how), and prints its
accuracies. On the training run's data they are the ones the run reported
for the saved epoch, exactly.

Flags:
`

// evaluation is what graft evaluate --json prints. The accuracies of the
// sets --split leaves out are omitted.
type evaluation struct {
	Model    string   `json:"model"`
	Dataset  string   `json:"dataset"`
	Split    string   `json:"split"`
	Epoch    int      `json:"epoch"`
	TrainAcc *float64 `json:"train_acc,omitempty"`
	ValAcc   *float64 `json:"val_acc,omitempty"`
	TestAcc  *float64 `json:"test_acc,omitempty"`
	ValLoss  *float64 `json:"val_loss,omitempty"`
	// Reproduces says whether the accuracies equal those the training run
	// reported for the saved epoch; absent when the file does not record
	// them or another dataset or split was evaluated.
	Reproduces *bool `json:"reproduces_run,omitempty"`
}

func runEvaluate(args []string, stdout, stderr io.Writer) error {
	var f savedFlags
	var asJSON bool
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	f.register(fs, "the set to score: all (train, val and test), train, val or test")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object (model, dataset, split, epoch, train_acc, val_acc, test_acc, val_loss) instead of text")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), evaluateUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	saved, in, err := f.load(fs, stderr)
	if err != nil {
		return err
	}
	sc, err := job.Evaluate(saved.Logits(in), in)
	if err != nil {
		return fmt.Errorf("dataset %s, split %s: %v", in.Dataset.Name, in.Split.Name, err)
	}
	info := &saved.Info
	e := evaluation{Model: info.Model.Model, Dataset: in.Dataset.Name, Split: in.Split.Name, Epoch: info.Epoch}
	show := func(set string) bool { return f.rows == "all" || f.rows == set }
	if show("train") {
		e.TrainAcc = &sc.TrainAcc
	}
	if show("val") {
		e.ValAcc, e.ValLoss = &sc.ValAcc, &sc.ValLoss
	}
	if show("test") {
		e.TestAcc = &sc.TestAcc
	}
	if info.Scored && f.spec == "" && in.Dataset.Name == info.Dataset && in.Dataset.NumNodes() == info.Nodes {
		same := sc.TrainAcc == info.TrainAcc && sc.ValAcc == info.ValAcc && sc.TestAcc == info.TestAcc
		e.Reproduces = &same
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(e)
	}
	fmt.Fprintf(stdout, "%s on %s (%s split; the saved epoch %d)\n", e.Model, e.Dataset, e.Split, e.Epoch)
	for _, s := range []struct {
		name string
		acc  *float64
		rows []int32
	}{{"train", e.TrainAcc, in.Split.Train}, {"val", e.ValAcc, in.Split.Val}, {"test", e.TestAcc, in.Split.Test}} {
		if s.acc != nil {
			fmt.Fprintf(stdout, "%-10s %.4f  (%d nodes)\n", s.name+" acc", *s.acc, len(s.rows))
		}
	}
	switch {
	case e.Reproduces == nil:
	case *e.Reproduces:
		fmt.Fprintln(stdout, "the training run reported the same accuracies for this epoch")
	case info.EvalSampler != "":
		fmt.Fprintf(stdout, "the training run reported train %.4f, val %.4f, test %.4f for this epoch, evaluated on neighbourhoods sampled by --eval-sampler %s; this evaluation is exact\n",
			info.TrainAcc, info.ValAcc, info.TestAcc, info.EvalSampler)
	default:
		fmt.Fprintf(stdout, "the training run reported train %.4f, val %.4f, test %.4f for this epoch (other data than it trained on?)\n",
			info.TrainAcc, info.ValAcc, info.TestAcc)
	}
	return nil
}
