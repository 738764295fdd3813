package main

import (
	"io"
	"strings"
	"testing"
)

func TestMinValLoss(t *testing.T) {
	metrics := `{"epoch":1,"val_loss":2.0,"val_acc":0.3,"test_acc":0.2}
{"epoch":2,"val_loss":0.5,"val_acc":0.8,"test_acc":0.81}
{"epoch":3,"val_loss":0.6,"val_acc":0.9,"test_acc":0.7}
{"epoch":4,"val_loss":0.5,"val_acc":0.85,"test_acc":0.75}
`
	e, err := minValLoss(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if e.Epoch != 2 || e.TestAcc != 0.81 {
		t.Errorf("got %+v, want epoch 2 (the first lowest loss) with test 0.81", e)
	}
	if _, err := minValLoss(strings.NewReader("")); err == nil {
		t.Error("empty metrics: no error")
	}
}

func TestSummarise(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string // rows of the table
	}{
		{
			name: "mean ± sample std over seeds, and the model at the lowest validation loss",
			in: `{"config":"a","args":"--x","result":{"test_acc":0.8,"best_val_acc":0.7,"epochs":10},"min_val_loss":{"test_acc":0.9}}
{"config":"a","args":"--x","result":{"test_acc":0.82,"best_val_acc":0.72,"epochs":20},"min_val_loss":{"test_acc":0.7}}
`,
			want: []string{"| a | 2 | 81.0 ± 1.4 | 71.0 ± 1.4 | 80.0 ± 14.1 | 0.0000 | 15 | `--x` |"},
		},
		{
			// Seed 3 of the method has no baseline and is left out of the
			// paired comparison: Δ = mean(+2, −1) ± std.
			name: "a method paired seed by seed with its full-graph baseline",
			in: `{"config":"s@full","args":"","result":{"seed":1,"test_acc":0.80,"best_val_acc":0.5,"epochs":1}}
{"config":"s@full","args":"","result":{"seed":2,"test_acc":0.82,"best_val_acc":0.5,"epochs":1}}
{"config":"s@neighbor","args":"","result":{"seed":2,"test_acc":0.81,"best_val_acc":0.5,"epochs":1}}
{"config":"s@neighbor","args":"","result":{"seed":1,"test_acc":0.82,"best_val_acc":0.5,"epochs":1}}
{"config":"s@neighbor","args":"","result":{"seed":3,"test_acc":0.10,"best_val_acc":0.5,"epochs":1}}
`,
			want: []string{"| s | neighbor | 2 | 81.5 ± 0.7 | 81.0 ± 1.4 | +0.50 ± 2.12 |"},
		},
		{
			// Bytes per epoch: 4000/20 against 200/20 and 300/30.
			name: "gradient compression paired with exact gradients, with the bytes sent",
			in: `{"config":"g@none","args":"","result":{"seed":1,"test_acc":0.80,"best_val_acc":0.5,"epochs":20,"bytes_grad":4000}}
{"config":"g@topk:0.01","args":"","result":{"seed":1,"test_acc":0.78,"best_val_acc":0.5,"epochs":20,"bytes_grad":200}}
{"config":"g@topk:0.01","args":"","result":{"seed":2,"test_acc":0.78,"best_val_acc":0.5,"epochs":30,"bytes_grad":300}}
`,
			want: []string{"| g | topk:0.01 | 1 | 78.0 ± 0.0 | 80.0 ± 0.0 | -2.00 ± 0.00 | 10 B | 20.0 |", "exact gradients, same seeds"},
		},
		{
			name: "bf16 paired seed by seed with float32",
			in: `{"config":"p@fp32","args":"","result":{"seed":1,"test_acc":0.80,"best_val_acc":0.5,"epochs":1}}
{"config":"p@bf16","args":"","result":{"seed":1,"test_acc":0.81,"best_val_acc":0.5,"epochs":1}}
`,
			want: []string{"| p | bf16 | 1 | 81.0 ± 0.0 | 80.0 ± 0.0 | +1.00 ± 0.00 |", "| fp32, same seeds (%) |"},
		},
		{
			name: "three seeds",
			in: `{"config":"c","args":"","result":{"test_acc":0.80,"best_val_acc":0.5,"epochs":1}}
{"config":"c","args":"","result":{"test_acc":0.82,"best_val_acc":0.5,"epochs":2}}
{"config":"c","args":"","result":{"test_acc":0.84,"best_val_acc":0.5,"epochs":3}}
`,
			want: []string{"| c | 3 | 82.0 ± 2.0 | 50.0 ± 0.0 | – | – | 2 | `` |"},
		},
		{
			name: "one seed has no spread; configurations in order of first appearance",
			in: `{"config":"b","args":"--y","result":{"test_acc":0.5,"best_val_acc":0.5,"epochs":5}}
{"config":"a","args":"--x","result":{"test_acc":0.8,"best_val_acc":0.7,"epochs":10}}
`,
			want: []string{"| b | 1 | 50.0 ± 0.0 | 50.0 ± 0.0 | – | – | 5 | `--y` |\n| a | 1 |"},
		},
		{
			// Candidate "hi" has the better test accuracy but the worse
			// validation loss: validation decides.
			name: "candidates chosen by validation loss",
			in: `{"config":"r/hi","args":"--a","result":{"test_acc":0.9,"best_val_acc":0.8,"epochs":10},"min_val_loss":{"test_acc":0.9,"val_loss":0.6}}
{"config":"r/lo","args":"--b","result":{"test_acc":0.8,"best_val_acc":0.8,"epochs":10},"min_val_loss":{"test_acc":0.8,"val_loss":0.4}}
`,
			want: []string{"| r/hi (not selected) |", "| r/lo (selected) |", "report the candidate with the lowest mean validation loss"},
		},
	} {
		var out strings.Builder
		if err := summarise(strings.NewReader(c.in), &out, options{}); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: table lacks %q:\n%s", c.name, want, out.String())
			}
		}
	}
}

func TestSummariseRejectsBadLines(t *testing.T) {
	in := `{"config":"a","args":"","result":{"test_acc":0.8}}
{"config":"a",
`
	err := summarise(strings.NewReader(in), &strings.Builder{}, options{})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v, want one naming line 2", err)
	}
}

func TestSelected(t *testing.T) {
	g := func(valLoss ...float64) *group {
		return &group{test: make([]float64, len(valLoss)), valLoss: valLoss}
	}
	for _, c := range []struct {
		name   string
		order  []string
		groups map[string]*group
		want   map[string]string
	}{
		{"rows without candidates choose nothing", []string{"a", "b"},
			map[string]*group{"a": g(0.1), "b": g(0.2)}, map[string]string{}},
		{"lowest mean validation loss wins", []string{"r/x", "r/y", "s/x", "s/y"},
			map[string]*group{"r/x": g(0.5, 0.1), "r/y": g(0.2, 0.3), "s/x": g(0.2), "s/y": g(0.3)},
			map[string]string{"r": "r/y", "s": "s/x"}},
		{"a tie keeps the first", []string{"r/x", "r/y"},
			map[string]*group{"r/x": g(0.25), "r/y": g(0.25)}, map[string]string{"r": "r/x"}},
		{"a candidate missing some losses does not compete", []string{"r/x", "r/y"},
			map[string]*group{"r/x": {test: make([]float64, 2), valLoss: []float64{0.01}}, "r/y": g(0.5, 0.5)},
			map[string]string{"r": "r/y"}},
	} {
		got := selected(c.order, c.groups)
		if len(got) != len(c.want) {
			t.Errorf("%s: selected %v, want %v", c.name, got, c.want)
			continue
		}
		for row, name := range c.want {
			if got[row] != name {
				t.Errorf("%s: selected %v, want %v", c.name, got, c.want)
			}
		}
	}
}

func TestSummariseOptions(t *testing.T) {
	// Two rows' methods interleaved in the file; c has no baseline.
	in := `{"config":"a@full","args":"","result":{"seed":1,"test_acc":0.80,"best_val_acc":0.5,"epochs":1}}
{"config":"b@full","args":"","result":{"seed":1,"test_acc":0.70,"best_val_acc":0.5,"epochs":1}}
{"config":"a@x","args":"","result":{"seed":1,"test_acc":0.81,"best_val_acc":0.5,"epochs":1}}
{"config":"b@x","args":"","result":{"seed":1,"test_acc":0.71,"best_val_acc":0.5,"epochs":1}}
{"config":"a@y","args":"","result":{"seed":1,"test_acc":0.82,"best_val_acc":0.5,"epochs":1}}
{"config":"c@x","args":"","result":{"seed":1,"test_acc":0.5,"best_val_acc":0.5,"epochs":1}}
`
	const header = "| configuration | method | seeds | test accuracy (%) | full-graph, same seeds (%) | paired Δ (points) |\n| --- | --- | --- | --- | --- | --- |\n"
	rowAX := "| a | x | 1 | 81.0 ± 0.0 | 80.0 ± 0.0 | +1.00 ± 0.00 |\n"
	rowAY := "| a | y | 1 | 82.0 ± 0.0 | 80.0 ± 0.0 | +2.00 ± 0.00 |\n"
	rowBX := "| b | x | 1 | 71.0 ± 0.0 | 70.0 ± 0.0 | +1.00 ± 0.00 |\n"
	for _, c := range []struct {
		name string
		args []string
		want string // the whole output; "" wants an error
	}{
		{"paired rows grouped by row, in order of first appearance", []string{"-paired"}, header + rowAX + rowAY + rowBX},
		{"only the configurations matched", []string{"-paired", "-only", "^a@"}, header + rowAX + rowAY},
		{"a method without its matched baseline is not paired", []string{"-paired", "-only", "@(x|y)$"}, ""},
		{"nothing matched", []string{"-only", "^z"}, ""},
		{"the table of every configuration first", []string{"-only", "^b@"},
			mainHeader + "\n| --- | --- | --- | --- | --- | --- | --- | --- |\n" +
				"| b@full | 1 | 70.0 ± 0.0 | 50.0 ± 0.0 | – | – | 1 | `` |\n| b@x | 1 | 71.0 ± 0.0 | 50.0 ± 0.0 | – | – | 1 | `` |\n\n" + header + rowBX},
	} {
		_, opt, err := parseArgs(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var out strings.Builder
		err = summarise(strings.NewReader(in), &out, opt)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: no error, printed\n%s", c.name, out.String())
		case c.want != "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case out.String() != c.want:
			t.Errorf("%s: printed\n%s\nwant\n%s", c.name, out.String(), c.want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // the error's text
	}{
		{[]string{"-only", "("}, "-only: error parsing regexp"},
		{[]string{"results.jsonl"}, `unexpected argument "results.jsonl": the runs come on stdin`},
		{[]string{"-nope"}, "flag provided but not defined"},
	} {
		_, _, err := parseArgs(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}
