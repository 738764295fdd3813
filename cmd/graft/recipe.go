package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

// recipeModels are the models whose settings help lists per recipe.
var recipeModels = []string{"gcn", "sage", "gat"}

// recipeUsage is the help of --recipe: each recipe, the datasets auto picks
// it for, and the flags it stands for per model.
func recipeUsage() string {
	var b strings.Builder
	b.WriteString("training recipe: the published setting whose data preparation, split, model selection and hyperparameters fill every flag not given (flags given override it). auto picks by --dataset:")
	for _, info := range train.Recipes() {
		fmt.Fprintf(&b, "\n%s: %s", info.Name, info.Summary)
		if len(info.Datasets) > 0 {
			fmt.Fprintf(&b, " (auto for %s)", strings.Join(info.Datasets, ", "))
		} else {
			b.WriteString(" (auto for every other dataset, and with --part-dir)")
		}
		for _, model := range recipeModels {
			r, err := train.RecipeFor(info.Name, model, "")
			if err == nil {
				fmt.Fprintf(&b, "\n  %-5s %s", model, recipeFlags(r, nil))
			}
		}
	}
	return b.String()
}

// recipeFlags spells out the settings of r as the flags that would give
// them, leaving out those skip reports true for.
func recipeFlags(r train.Recipe, skip func(flag string) bool) string {
	p := r.Preset
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	sel := "acc"
	if r.SelectByLoss {
		sel = "loss"
	}
	decay := g(p.WeightDecay)
	if p.DecayFirstLayerOnly {
		decay += " (first layer)"
	}
	all := [][2]string{{"split", " " + r.Split}, {"lcc", ""}, {"row-normalize", "=" + strconv.FormatBool(r.RowNormalize)},
		{"features", " " + storageName(r.Features)}, {"select", " " + sel}, {"layers", " " + strconv.Itoa(p.Layers)},
		{"hidden", " " + strconv.Itoa(p.Hidden)}, {"heads", " " + strconv.Itoa(p.Heads)}, {"normalize", ""},
		{"dropout", " " + g(p.Dropout)}, {"lr", " " + g(p.LR)}, {"weight-decay", " " + decay},
		{"epochs", " " + strconv.Itoa(p.Epochs)}, {"patience", " " + strconv.Itoa(p.Patience)}}
	var f []string
	for _, kv := range all {
		switch {
		case skip != nil && skip(kv[0]),
			kv[0] == "lcc" && !r.LCC, kv[0] == "normalize" && !p.Normalize, kv[0] == "heads" && p.Heads <= 1:
			continue
		}
		f = append(f, "--"+kv[0]+kv[1])
	}
	return strings.Join(f, " ")
}

func storageName(s nn.Storage) string {
	switch s {
	case nn.ForceDense:
		return "dense"
	case nn.ForceSparse:
		return "sparse"
	}
	return "auto"
}

// resolveRecipe is the recipe in force: --recipe, or for auto the one
// for --dataset (none with --part-dir, whose data is already prepared).
func (o *trainOptions) resolveRecipe() (train.Recipe, error) {
	name := o.recipeName
	if name == "auto" {
		name = train.AutoRecipe(o.dataset)
		if o.worker.partDir != "" {
			name = "none"
		}
	}
	if _, err := train.PresetFor(o.model); err != nil {
		return train.Recipe{}, err
	}
	r, err := train.RecipeFor(name, o.model, o.dataset)
	if err != nil {
		return train.Recipe{}, fmt.Errorf("--recipe: %v", err)
	}
	return r, nil
}

// applyRecipe resolves the recipe and fills the data and selection flags
// the command line leaves unset from it; config takes the model's
// hyperparameters from it.
func (o *trainOptions) applyRecipe(fs *flag.FlagSet) error {
	r, err := o.resolveRecipe()
	if err != nil {
		return usageError{err}
	}
	o.recipe = r
	if !flagSet(fs, "split") {
		o.split = r.Split
	}
	if !flagSet(fs, "lcc") {
		o.lcc = r.LCC
	}
	if !flagSet(fs, "row-normalize") {
		o.rowNormalize = r.RowNormalize
	}
	if o.features == "" { // not given as a storage name
		o.features = storageName(r.Features)
	}
	if !flagSet(fs, "select") {
		o.selectBy = "acc"
		if r.SelectByLoss {
			o.selectBy = "loss"
		}
	}
	return nil
}

// printRecipeInForce ends train's help with the recipe the other flags
// select.
func (o *trainOptions) printRecipeInForce(w io.Writer) {
	r, err := o.resolveRecipe()
	if err != nil {
		return
	}
	fmt.Fprintf(w, "\nRecipe in force for --dataset %s --model %s: %s (--recipe %s)\n  %s\n", o.dataset, o.model, r.Name, o.recipeName, recipeFlags(r, nil))
}

// recipeNote says in one line which recipe is in force and what it sets
// that the command line does not, unless it is none or was asked for by
// name.
func (o *trainOptions) recipeNote(fs *flag.FlagSet) string {
	if o.recipe.Name == "none" || flagSet(fs, "recipe") {
		return ""
	}
	given := func(name string) bool { return flagSet(fs, name) }
	return fmt.Sprintf("graft train: recipe %s for %s sets %s (--recipe none for none)", o.recipe.Name, o.dataset, recipeFlags(o.recipe, given))
}
