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
				fmt.Fprintf(&b, "\n  %-5s %s", model, recipeFlags(r))
			}
		}
	}
	return b.String()
}

// recipeFlags spells out the settings of r as the flags that would give
// them.
func recipeFlags(r train.Recipe) string {
	p := r.Preset
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	sel := "acc"
	if r.SelectByLoss {
		sel = "loss"
	}
	f := []string{"--split " + r.Split}
	if r.LCC {
		f = append(f, "--lcc")
	}
	f = append(f, "--row-normalize="+strconv.FormatBool(r.RowNormalize), "--features "+storageName(r.Features), "--select "+sel,
		"--layers "+strconv.Itoa(p.Layers), "--hidden "+strconv.Itoa(p.Hidden))
	if p.Heads > 1 {
		f = append(f, "--heads "+strconv.Itoa(p.Heads))
	}
	if p.Normalize {
		f = append(f, "--normalize")
	}
	decay := "--weight-decay " + g(p.WeightDecay)
	if p.DecayFirstLayerOnly {
		decay += " (first layer)"
	}
	f = append(f, "--dropout "+g(p.Dropout), "--lr "+g(p.LR), decay, "--epochs "+strconv.Itoa(p.Epochs), "--patience "+strconv.Itoa(p.Patience))
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
	if !flagSet(fs, "features") {
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
	fmt.Fprintf(w, "\nRecipe in force for --dataset %s --model %s: %s (--recipe %s)\n  %s\n", o.dataset, o.model, r.Name, o.recipeName, recipeFlags(r))
}

// noteRecipe says in one line which recipe is in force, unless it is none
// or was asked for by name.
func (o *trainOptions) noteRecipe(w io.Writer, fs *flag.FlagSet) {
	if o.recipe.Name == "none" || flagSet(fs, "recipe") {
		return
	}
	fmt.Fprintf(w, "graft train: recipe %s for %s (--recipe none for none; flags given override it): %s\n", o.recipe.Name, o.dataset, recipeFlags(o.recipe))
}
