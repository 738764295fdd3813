package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/graft-gnn/graft/metrics"
)

func init() {
	commands["plot"] = command{"draw the curves of graft train --metrics files (PNG or SVG)", runPlot}
}

const plotUsage = `usage: graft plot FILE.jsonl... -o OUT.png|OUT.svg

Draws the epochs of one or more 'graft train --metrics' files: loss and
accuracy against epoch; accuracy against bytes sent when the run sent any
(--parts > 1); accuracy against emulated time when it ran on an emulated
link (--link); compute seconds per worker when it had two or more. Several
files are drawn into the same panels, one colour per file.`

func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plot")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), plotUsage)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	var out string
	fs.StringVar(&out, "o", "", "image to write; its extension, .png or .svg, chooses the format")
	fs.StringVar(&out, "out", "", "same as -o")
	files, err := parseFlagsAnywhere(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{fmt.Errorf("no metrics files given (see 'graft plot -h')")}
	}
	if out == "" {
		return usageError{fmt.Errorf("missing -o OUT.png or -o OUT.svg")}
	}
	names := runNames(files)
	runs := make([]metrics.Run, len(files))
	for i, path := range files {
		epochs, err := readJSONLinesFile[metrics.Epoch](path)
		if err != nil {
			return err
		}
		for n, e := range epochs {
			if e.Epoch < 1 {
				return fmt.Errorf("%s: line %d is not an epoch record that 'graft train --metrics' writes (epoch, loss, train_acc, …)", path, recordLine(path, n))
			}
		}
		runs[i] = metrics.Run{Name: names[i], Epochs: epochs}
	}
	panels := metrics.EpochPanels(runs)
	if err := metrics.PlotPanels(panels, out); err != nil {
		return err
	}
	titles := make([]string, len(panels))
	for i, p := range panels {
		titles[i] = p.Title
	}
	fmt.Fprintf(stdout, "wrote %s: %s\n", out, strings.Join(titles, "; "))
	return nil
}

// readJSONLinesFile reads a file of JSON-lines records. Errors name the
// file; an empty one is an error too, since there is nothing to draw.
func readJSONLinesFile[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := metrics.ReadJSONLinesOf[T](f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s is empty: nothing to plot", path)
	}
	return records, nil
}

// recordLine is the line number of record n (from 0) of the JSON lines
// file at path, whose blank lines hold no record.
func recordLine(path string, n int) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return n + 1
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if n == 0 {
			return i + 1
		}
		n--
	}
	return n + 1
}

// runNames names each file's run in the legend: its base name without the
// extension, or the whole path when two base names are the same (say
// a/metrics.jsonl and b/metrics.jsonl).
func runNames(paths []string) []string {
	names := make([]string, len(paths))
	seen := map[string]bool{}
	unique := true
	for i, p := range paths {
		names[i] = strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		unique = unique && !seen[names[i]]
		seen[names[i]] = true
	}
	if !unique {
		for i, p := range paths {
			names[i] = strings.TrimSuffix(p, filepath.Ext(p))
		}
	}
	return names
}
