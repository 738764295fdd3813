package main

import (
	"bytes"
	"image"
	_ "image/png" // image.Decode reads the PNG files graft plot writes
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/metrics"
)

// writeEpochs writes a metrics file of n epochs of a two-worker run.
func writeEpochs(t *testing.T, path string, n int) {
	t.Helper()
	sink, err := metrics.CreateJSONLines[metrics.Epoch](path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		e := metrics.Epoch{Epoch: i, Loss: 2 / float64(i), ValAcc: 0.5, BytesFwd: 1000, WorkerCompute: []float64{0.1, 0.2}}
		if err := sink.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "b.jsonl", "-dash.jsonl"} {
		writeEpochs(t, filepath.Join(dir, name), 4)
	}
	a, b, dash := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "-dash.jsonl")
	tests := []struct {
		name string
		args []string // after "plot"; OUT stands for the output path
		out  string
	}{
		{"flag after the file", []string{a, "-o", "OUT"}, "curves.png"},
		{"flag before the file", []string{"-o", "OUT", a}, "curves.svg"},
		{"long flag between files", []string{a, "--out=OUT", b}, "two.png"},
		{"a file that looks like a flag after --", []string{"-o", "OUT", "--", dash}, "dash.svg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tt.out)
			args := []string{"plot"}
			for _, arg := range tt.args {
				args = append(args, strings.ReplaceAll(arg, "OUT", out))
			}
			code, stdout, stderr := runGraft(t, args...)
			if code != 0 {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			want := "wrote " + out + ": loss; accuracy; accuracy against communication; compute time per worker\n"
			if stdout != want {
				t.Errorf("stdout %q, want %q", stdout, want)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(out, ".png") {
				if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
					t.Errorf("%s is not a PNG: %v", out, err)
				}
			} else if !bytes.Contains(data, []byte("<svg")) {
				t.Errorf("%s is not an SVG", out)
			}
		})
	}
}

func TestPlotCommandErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	writeEpochs(t, good, 2)
	empty := filepath.Join(dir, "empty.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("{\"epoch\":1}\n{\"epoch\":2}\n{\"epoch\":3,\"loss\":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// JSON lines of another kind: graft decentral's, or anything else.
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other, []byte("{\"task\":\"regression\",\"metric\":\"test_mse\",\"rounds\":42}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An epoch record after blank lines, then one of another kind.
	mixed := filepath.Join(dir, "mixed.jsonl")
	if err := os.WriteFile(mixed, []byte("\n\n{\"epoch\":1,\"loss\":1}\n\n{\"task\":\"regression\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.png")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"no files", []string{"plot", "-o", out}, 2, "no metrics files given"},
		{"no output", []string{"plot", good}, 2, "missing -o"},
		{"unknown flag", []string{"plot", good, "--width", "3"}, 2, "unknown flag --width"},
		{"missing file", []string{"plot", filepath.Join(dir, "nope.jsonl"), "-o", out}, 1, "nope.jsonl: no such file or directory"},
		{"empty file", []string{"plot", empty, "-o", out}, 1, "empty.jsonl is empty"},
		{"bad line", []string{"plot", good, bad, "-o", out}, 1, "bad.jsonl: line 3: unexpected end of JSON input"},
		{"not epoch records", []string{"plot", good, other, "-o", out}, 1, "other.jsonl: line 1 is not an epoch record that 'graft train --metrics' writes"},
		{"not an epoch record after blank lines", []string{"plot", good, mixed, "-o", out}, 1, "mixed.jsonl: line 5 is not an epoch record"},
		{"unknown image type", []string{"plot", good, "-o", filepath.Join(dir, "out.jpg")}, 1, "want a .png or .svg file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkFailure(t, tt.args, tt.wantCode, tt.want) })
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed plot wrote its output")
	}
}

// checkFailure runs a command line that must fail with exit code wantCode
// and end its stderr with the one-line error "graft COMMAND: …want…",
// with no panic before it.
func checkFailure(t *testing.T, args []string, wantCode int, want string) {
	t.Helper()
	code, _, stderr := runGraft(t, args...)
	if code != wantCode {
		t.Errorf("exit code %d, want %d (stderr %q)", code, wantCode, stderr)
	}
	last, _ := lastError(stderr)
	prefix := "graft " + args[0] + ": "
	if !strings.HasPrefix(last, prefix) || !strings.Contains(last, want) {
		t.Errorf("last stderr line %q, want \"%s…%s…\"", last, prefix, want)
	}
	if strings.Contains(stderr, "panic") {
		t.Errorf("stderr shows a panic:\n%s", stderr)
	}
}

// A real run's metrics file, as graft train writes it, plots with every
// panel its flags give data for.
func TestPlotTrainMetrics(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	m := filepath.Join(dir, "m.jsonl")
	if code, _, stderr := runGraft(t, "train", "--epochs", "3", "--parts", "2", "--link", "1gbit:1ms", "--metrics", m); code != 0 {
		t.Fatalf("graft train: exit code %d, stderr %q", code, stderr)
	}
	out := filepath.Join(dir, "m.svg")
	code, stdout, stderr := runGraft(t, "plot", m, "-o", out)
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	for _, panel := range []string{"accuracy against communication", "accuracy against emulated time", "compute time per worker"} {
		if !strings.Contains(stdout, panel) {
			t.Errorf("stdout %q lacks the panel %q", stdout, panel)
		}
	}
	// One process on no emulated link: loss and accuracy only (its
	// emulated time is its compute time, no panel of its own).
	one := filepath.Join(dir, "one.jsonl")
	if code, _, stderr := runGraft(t, "train", "--epochs", "3", "--metrics", one); code != 0 {
		t.Fatalf("graft train: exit code %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := runGraft(t, "plot", one, "-o", out); code != 0 || stdout != "wrote "+out+": loss; accuracy\n" {
		t.Errorf("exit code %d, stdout %q (stderr %q); want only loss and accuracy panels", code, stdout, stderr)
	}
}

func TestRunNames(t *testing.T) {
	tests := []struct {
		paths, want []string
	}{
		{[]string{"runs/topk.jsonl", "runs/none.jsonl"}, []string{"topk", "none"}},
		{[]string{"a/metrics.jsonl", "b/metrics.jsonl"}, []string{"a/metrics", "b/metrics"}},
		{[]string{"plain"}, []string{"plain"}},
	}
	for _, tt := range tests {
		if got := runNames(tt.paths); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("runNames(%q) = %q, want %q", tt.paths, got, tt.want)
		}
	}
}

// lastError splits stderr into its error line (the last line, or the one
// before a pointer to the help) and that pointer, if any.
func lastError(stderr string) (line, hint string) {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if n := len(lines); n > 1 && strings.HasPrefix(lines[n-1], "run 'graft ") {
		return lines[n-2], lines[n-1]
	}
	return lines[len(lines)-1], ""
}
