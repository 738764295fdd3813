package main

import (
	"io"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/train"
)

// Values out of range are errors on every command, never replaced by a
// default; none of these starts any work.
func TestInvalidValues(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"train", "--epochs", "0"}, "graft train: --epochs 0: want 1 or more"},
		{[]string{"train", "--hidden", "0"}, "graft train: --hidden 0: want 1 or more"},
		{[]string{"train", "--layers", "0"}, "graft train: --layers 0: want 1 or more"},
		{[]string{"train", "--model", "gat", "--heads", "0"}, "graft train: --heads 0: want 1 or more"},
		{[]string{"train", "--lr", "0"}, "graft train: --lr 0: want a positive learning rate"},
		{[]string{"train", "--lr", "-0.01"}, "graft train: --lr -0.01: want a positive learning rate"},
		{[]string{"train", "--lr", "NaN"}, "graft train: --lr NaN: want a positive learning rate"},
		{[]string{"train", "--weight-decay", "-1"}, "graft train: --weight-decay -1: want 0 or more"},
		{[]string{"train", "--dropout", "-0.5"}, "graft train: --dropout -0.5: want a rate in [0, 1)"},
		{[]string{"train", "--dropout", "1"}, "graft train: --dropout 1: want a rate in [0, 1)"},
		{[]string{"train", "--patience", "-5"}, "graft train: --patience -5: want 0 or more"},
		{[]string{"train", "--rank", "-1"}, `graft train: invalid value "-1" for flag --rank: want 0 or more`},
		{[]string{"train", "--world", "0"}, `graft train: invalid value "0" for flag --world: want 1 or more`},
		{[]string{"decentral", "power", "--lr", "0"}, "graft decentral: --lr 0: want a positive learning rate"},
		{[]string{"bench", "kernels", "--reps", "0"}, "graft bench: --reps 0: want 1 or more"},
		{[]string{"bench", "train", "--reps", "-2"}, "graft bench: --reps -2: want 1 or more"},
		{[]string{"bench", "train", "--nodes", "0"}, "graft bench: --nodes 0: want 2 or more"},
		{[]string{"bench", "sample", "--batch-size", "0"}, "graft bench: --batch-size 0: want 1 or more"},
		{[]string{"bench", "sample", "--batches", "0"}, "graft bench: --batches 0: want 1 or more"},
		{[]string{"worker", "bench", "--reps", "0"}, "graft worker: --reps 0: want 1 or more"},
		{[]string{"worker", "bench", "--mib", "0"}, "graft worker: --mib 0: want 1 or more"},
		{[]string{"worker", "selftest", "--n", "0"}, "graft worker: --n 0: want 1 or more"},
		{[]string{"worker", "selftest", "--exit-rank", "-1"}, `graft worker: invalid value "-1" for flag --exit-rank: want 0 or more`},
		{[]string{"partition", "--dataset", "cora", "--parts", "2", "--imbalance", "0"}, "graft partition: --imbalance 0: want a positive tolerance"},
		{[]string{"launch", "--port", "-1", "--", "train"}, "graft launch: --port -1: want a port from 1 to 65535, or 0 for a free one"},
		{[]string{"launch", "--grace", "-1s", "--", "train"}, "graft launch: --grace -1s: want 0 or more"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runGraft(t, tt.args...)
			line, _ := lastError(stderr)
			if code != 2 || line != tt.want || strings.Count(stderr, "\n") > 2 {
				t.Errorf("exit code %d, stderr\n%s\nwant 2 and the line\n%s", code, stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

// Hyperparameters not given are the model's recipe; given ones, including
// values such as --patience 0 (never stop early) and --weight-decay 0
// that once meant "not given", are used as they are.
func TestTrainFlagsOverPreset(t *testing.T) {
	tests := []struct {
		args []string
		want func(c train.Config) bool
	}{
		{[]string{"--model", "sage"}, func(c train.Config) bool { // Cora's recipe, planetoid
			return c.Model.Hidden == 32 && c.Epochs == 200 && c.Patience == 100 && c.Optimizer.LR == 0.01 && c.WeightDecay == 5e-4 && c.Model.Dropout == 0.5
		}},
		{[]string{"--model", "gat"}, func(c train.Config) bool { return c.Model.Heads == 8 && c.Model.Hidden == 8 }},
		{[]string{"--patience", "0", "--weight-decay", "0", "--dropout", "0"}, func(c train.Config) bool {
			return c.Patience == 0 && c.WeightDecay == 0 && c.Model.Dropout == 0 && c.Epochs == 200
		}},
		{[]string{"--model", "sage", "--hidden", "7", "--lr", "0.5", "--epochs", "3", "--layers", "3"}, func(c train.Config) bool {
			return c.Model.Hidden == 7 && c.Optimizer.LR == 0.5 && c.Epochs == 3 && c.Model.Layers == 3 && c.Patience == 100
		}},
	}
	for _, tt := range tests {
		var o trainOptions
		fs := newTrainFlags(&o)
		if err := parseFlags(fs, tt.args, io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := o.applyRecipe(fs); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := o.config(fs)
		if err != nil || !tt.want(cfg) {
			t.Errorf("%v: config %+v, %v", tt.args, cfg, err)
		}
	}
}

// -h says that the hyperparameters default to the recipe's, and --recipe
// lists each recipe's values per model.
func TestTrainHelpDefaults(t *testing.T) {
	_, help, _ := runGraft(t, "train", "-h")
	for _, want := range []string{
		"number of layers (default: the recipe's, 2)\n",
		"hidden width, per head for GAT (default: the recipe's)\n",
		"learning rate (default: the recipe's)\n",
		"  gcn   --split public --row-normalize=true --features auto --select acc --layers 2 --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 0.0005 (first layer) --epochs 200 --patience 100",
		"Recipe in force for --dataset cora --model gcn: planetoid",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("train -h lacks %q", want)
		}
	}
}
