package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/train"
)

var updateRecipeTable = flag.Bool("update-recipe-table", false, "rewrite docs/training.md's recipe table from the code")

// The recipe table of docs/training.md lies between these markers; it is
// generated from train.Recipes and recipeFlags, as train -h's help is.
const (
	recipeTableBegin = "<!-- recipe table: generated from the code; go test ./cmd/graft -run TestRecipeTableInDocs -update-recipe-table -->"
	recipeTableEnd   = "<!-- end of recipe table -->"
)

// recipeTable is the Markdown table of every recipe's settings per model,
// with a row of its own where a dataset changes them.
func recipeTable(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("| `--recipe` | `auto` picks it for | model | the flags it stands for |\n|---|---|---|---|\n")
	for _, info := range train.Recipes() {
		auto := "every other dataset, and `--part-dir`"
		if len(info.Datasets) > 0 {
			auto = strings.Join(info.Datasets, ", ")
		}
		for _, model := range recipeModels {
			r, err := train.RecipeFor(info.Name, model, "")
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` |\n", info.Name, auto, model, recipeFlags(r, nil))
			for _, ds := range info.Datasets {
				rd, err := train.RecipeFor(info.Name, model, ds)
				if err != nil {
					t.Fatal(err)
				}
				if f := recipeFlags(rd, nil); f != recipeFlags(r, nil) {
					fmt.Fprintf(&b, "| `%s` | %s | %s on %s | `%s` |\n", info.Name, auto, model, ds, f)
				}
			}
		}
	}
	return b.String()
}

// TestRecipeTableInDocs checks that docs/training.md shows the recipes as
// the code defines them; -update-recipe-table rewrites the table.
func TestRecipeTableInDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "training.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	before, rest, ok := strings.Cut(text, recipeTableBegin+"\n")
	if !ok {
		t.Fatalf("%s: no line %q", path, recipeTableBegin)
	}
	table, after, ok := strings.Cut(rest, recipeTableEnd)
	if !ok {
		t.Fatalf("%s: no line %q after the table", path, recipeTableEnd)
	}
	want := recipeTable(t)
	if table == want {
		return
	}
	if *updateRecipeTable {
		if err := os.WriteFile(path, []byte(before+recipeTableBegin+"\n"+want+recipeTableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the recipe table differs from the code's recipes; run go test ./cmd/graft -run TestRecipeTableInDocs -update-recipe-table\nhave:\n%s\nwant:\n%s", path, table, want)
}
