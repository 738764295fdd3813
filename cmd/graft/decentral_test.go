package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/train/decentral"
)

// --metrics writes the history in the format scripts/decentral.sh and
// docs/decentral/runs keep: task, metric and the point's four keys, in
// that order, one evaluation per line, the same points as the result's.
func TestDecentralMetricsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	code, stdout, stderr := runGraft(t, "decentral", "regression", "--quick", "--piggyback", "--metrics", path, "--json")
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	var res decentral.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for ; sc.Scan(); n++ {
		if n >= len(res.History) {
			t.Fatalf("more lines than the %d points of the history", len(res.History))
		}
		p := res.History[n]
		wantLine := strings.Join([]string{
			`{"task":"regression"`, `"metric":"test_mse"`, `"batch":` + jsonNumber(p.Batch), `"rounds":` + jsonNumber(p.Rounds),
			`"distributed":` + jsonNumber(p.Distributed), `"centralized":` + jsonNumber(p.Centralized) + "}",
		}, ",")
		if sc.Text() != wantLine {
			t.Errorf("line %d\n%s\nwant\n%s", n+1, sc.Text(), wantLine)
		}
	}
	if n != len(res.History) {
		t.Errorf("%d lines for %d points", n, len(res.History))
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// graft decentral plot draws the committed histories of
// docs/decentral/runs, the files scripts/decentral.sh plots, one panel
// each, with the flag before or after the files.
func TestDecentralPlot(t *testing.T) {
	runs := filepath.Join("..", "..", "docs", "decentral", "runs")
	files := []string{
		filepath.Join(runs, "regression_dadam_s1.jsonl"),
		filepath.Join(runs, "power_dadam_s1.jsonl"),
		filepath.Join(runs, "scheduling_dadam_s1.jsonl"),
	}
	for _, flagFirst := range []bool{true, false} {
		out := filepath.Join(t.TempDir(), "metric_vs_rounds.svg")
		args := append([]string{"decentral", "plot"}, files...)
		if flagFirst {
			args = append([]string{"decentral", "plot", "--out", out}, files...)
		} else {
			args = append(args, "--out", out)
		}
		code, stdout, stderr := runGraft(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit code %d, stderr %q", args, code, stderr)
		}
		if stdout != "wrote "+out+"\n" {
			t.Errorf("stdout %q", stdout)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(data, new(struct{})); err != nil {
			t.Errorf("not well-formed XML: %v", err)
		}
		for _, title := range []string{"regression: test_mse", "power: sum_rate", "scheduling: weight_ratio", "distributed", "centralized"} {
			if !bytes.Contains(data, []byte(">"+title+"<")) {
				t.Errorf("the image has no text %q", title)
			}
		}
	}
}

func TestDecentralPlotErrors(t *testing.T) {
	dir := t.TempDir()
	const line = `{"task":"power","metric":"sum_rate","batch":0,"rounds":0,"distributed":1,"centralized":1}` + "\n"
	good, empty, bad := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "empty.jsonl"), filepath.Join(dir, "bad.jsonl")
	trainMetrics := filepath.Join(dir, "train.jsonl") // graft train --metrics: nothing decentral plot draws
	for path, content := range map[string]string{good: line, empty: "", bad: line + "not json\n",
		trainMetrics: `{"epoch":1,"loss":1.9,"train_acc":0.2}` + "\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out.svg")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"no files", []string{"--out", out}, 2, "no metrics files given"},
		{"not decentral metrics", []string{"--out", out, trainMetrics}, 1, "train.jsonl has nothing to plot: line 1 is not an evaluation"},
		{"missing file", []string{"--out", out, filepath.Join(dir, "none.jsonl")}, 1, "none.jsonl: no such file or directory"},
		{"empty file", []string{"--out", out, empty}, 1, "empty.jsonl is empty"},
		{"bad line", []string{"--out", out, bad}, 1, "bad.jsonl: line 2: not a JSON object"},
		{"unknown image type", []string{"--out", filepath.Join(dir, "out.pdf"), good}, 1, "want a .png or .svg file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFailure(t, append([]string{"decentral", "plot"}, tt.args...), tt.wantCode, tt.want)
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed plot wrote its image")
	}
}

// graft decentral table still reads the committed results into the
// committed table.
func TestDecentralTable(t *testing.T) {
	code, stdout, stderr := runGraft(t, "decentral", "table", filepath.Join("..", "..", "docs", "decentral", "runs"))
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "decentral", "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("table differs from docs/decentral/results.md:\n%s", stdout)
	}
}

func TestDecentralTableErrors(t *testing.T) {
	dir, empty := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "train.json"), []byte(`{"dataset":"cora","test_acc":0.8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"no directory", nil, 2, "want one directory of results"},
		{"two directories", []string{dir, empty}, 2, "want one directory of results"},
		{"no results", []string{empty}, 1, empty + " holds no results"},
		{"missing directory", []string{filepath.Join(empty, "none")}, 1, "no such file or directory"},
		{"not decentral results", []string{dir}, 1, "train.json is not a result of graft decentral TASK --json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFailure(t, append([]string{"decentral", "table"}, tt.args...), tt.wantCode, tt.want)
		})
	}
}
