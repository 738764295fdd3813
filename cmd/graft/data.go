package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/sysstat"
)

func init() {
	commands["data"] = command{"inspect datasets: data info <name|path>, data list; write one: data generate <spec> --out DIR", runData}
}

const dataUsage = `usage:
  graft data info <name|path> [--data-dir DIR] [--labels FILE] [--features FILE] [--split SPEC] [--seed N] [--json]
  graft data list [--data-dir DIR]
  graft data generate <spec> --out DIR [--features-dtype fp32|bf16] [--json]

The data directory defaults to $GRAFT_DATA. Cora is built in and needs none.
Split specs:
`

// runData implements `graft data`.
func runData(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, dataUsage+indent(dataset.SplitSpecs))
		return usageError{errors.New("missing subcommand: info, list or generate")}
	}
	switch args[0] {
	case "info":
		return runDataInfo(args[1:], stdout, stderr)
	case "list":
		return runDataList(args[1:], stdout, stderr)
	case "generate":
		return runDataGenerate(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, dataUsage+indent(dataset.SplitSpecs))
		return nil
	}
	return unknownName("subcommand", args[0], []string{"info", "list", "generate"})
}

// parseInterspersed parses flags that may come before or after positional
// arguments (graft data info cora --json), which flag.Parse alone does not.
func parseInterspersed(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := parseFlags(fs, args, stderr); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func runDataList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data list")
	dataDir := fs.String("data-dir", "", "directory holding the staged datasets (default $GRAFT_DATA)")
	rest, err := parseInterspersed(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{fmt.Errorf("data list takes no arguments, got %q", rest)}
	}
	dir := dataset.ResolveDataDir(*dataDir)
	if dir == "" {
		fmt.Fprintf(stdout, "data directory: none (set --data-dir or %s)\n\n", dataset.DataDirEnv)
	} else if problem := dataset.DataDirProblem(dir); problem != "" {
		fmt.Fprintf(stdout, "data directory: %s (it %s; set --data-dir or %s)\n\n", dir, problem, dataset.DataDirEnv)
	} else {
		fmt.Fprintf(stdout, "data directory: %s\n\n", dir)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tDESCRIPTION")
	for _, e := range dataset.Registry() {
		found, missing := e.Found(dir)
		status := "found"
		switch {
		case found:
		case e.Embedded:
			status = "built in"
		case dir == "":
			status = "no data dir"
		default:
			status = "missing " + strings.TrimPrefix(missing, dir+"/")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, status, e.Description)
	}
	return tw.Flush()
}

// dataInfo is what `graft data info` reports; --json prints it as is.
type dataInfo struct {
	Name  string `json:"name"`
	Nodes int    `json:"nodes"`
	// NodeIDs says how the source named the nodes: "numbers" (node i is
	// id i) or "renumbered" (other ids, such as LINQS paper ids or an
	// edge list's strings, which the dataset keeps).
	NodeIDs         string `json:"node_ids"`
	UndirectedEdges int64  `json:"undirected_edges"`
	StoredEdges     int64  `json:"stored_directed_edges"`
	Features        int    `json:"features"`
	FeatureStorage  string `json:"feature_storage"` // dense, sparse or none
	// FeaturesMapped is the feature file when it is mapped into memory
	// (--features-mmap), FeatureDType its values' type (fp32 or bf16).
	FeaturesMapped  string              `json:"features_mapped,omitempty"`
	FeatureDType    string              `json:"feature_dtype,omitempty"`
	FeatureNonzeros int64               `json:"feature_nonzeros"`
	FeatureDensity  float64             `json:"feature_density"`
	Classes         []classInfo         `json:"classes"`
	Unlabelled      int                 `json:"unlabelled"`
	FixedSplits     []string            `json:"fixed_splits"`
	Split           *splitInfo          `json:"split,omitempty"`
	Degree          dataset.DegreeStats `json:"degree"`
	LoadSeconds     float64             `json:"load_seconds"`
	// ReadSeconds is the time to read the dataset's files alone (load
	// also counts the statistics above), and ReadRSSBytes the process's
	// peak resident memory while reading them.
	ReadSeconds  float64 `json:"read_seconds"`
	ReadRSSBytes int64   `json:"read_rss_bytes"`
}

type classInfo struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

type splitInfo struct {
	Spec  string `json:"spec"`
	Train int    `json:"train"`
	Val   int    `json:"val"`
	Test  int    `json:"test"`
}

func runDataInfo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data info")
	dataDir := fs.String("data-dir", "", "directory holding the staged datasets (default $GRAFT_DATA)")
	var files dataset.NodeFiles
	registerNodeFiles(fs, &files, nil)
	splitSpec := fs.String("split", "", "split to report (default auto: the dataset's own, if it ships one, else a seeded stratified 60/20/20)")
	seed := fs.Uint64("seed", 0, "seed for random and frac splits")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	rest, err := parseInterspersed(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError{fmt.Errorf("data info takes one dataset name or path (known names: %s)", strings.Join(dataset.KnownNames(), ", "))}
	}
	sysstat.ResetPeakRSS()
	start := time.Now()
	d, err := dataset.LoadWith(rest[0], *dataDir, files)
	if err != nil {
		return err
	}
	read, readRSS := time.Since(start).Seconds(), sysstat.PeakRSS()
	if d.EdgeListHeader != "" {
		fmt.Fprintf(stderr, "graft data info: the first line of %s, %q, was read as a header naming its columns, not as an edge\n", d.Name, d.EdgeListHeader)
	}
	if m := d.Mapped; m != nil && m.Auto {
		fmt.Fprintf(stderr, "graft data info: %s (%s) is over half the %s of memory available: mapped, not read (--features-mmap=false reads it)\n",
			m.Path, formatBytes(m.Bytes), formatBytes(m.Available))
	}
	info := describe(d)
	info.LoadSeconds, info.ReadSeconds, info.ReadRSSBytes = time.Since(start).Seconds(), read, readRSS

	spec := *splitSpec
	if spec == "" && d.Labels != nil {
		spec = "auto"
	}
	if spec != "" {
		s, err := d.Split(spec, *seed)
		if err != nil {
			return err
		}
		info.Split = &splitInfo{Spec: s.Name, Train: len(s.Train), Val: len(s.Val), Test: len(s.Test)}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return printInfo(stdout, info)
}

func describe(d *dataset.Dataset) dataInfo {
	info := dataInfo{
		Name:            d.Name,
		Nodes:           d.NumNodes(),
		UndirectedEdges: d.NumUndirectedEdges(),
		StoredEdges:     d.Graph.NumEdges(),
		Features:        d.NumFeatures(),
		FeatureStorage:  "none",
		Degree:          d.Degrees(),
		Classes:         []classInfo{},
		FixedSplits:     []string{},
		NodeIDs:         "numbers",
	}
	if d.NodeIDs != nil {
		info.NodeIDs = "renumbered"
	}
	switch {
	case d.Sparse != nil:
		info.FeatureStorage = "sparse"
	case d.Dense != nil, d.DenseBF16 != nil:
		info.FeatureStorage = "dense"
	}
	if m := d.Mapped; m != nil {
		info.FeaturesMapped, info.FeatureDType = m.Path, "fp32"
		if m.BF16 {
			info.FeatureDType = "bf16"
		}
	}
	if info.Features > 0 {
		info.FeatureNonzeros = d.FeatureNonzeros()
		info.FeatureDensity = float64(info.FeatureNonzeros) / (float64(info.Nodes) * float64(info.Features))
	}
	labelled := 0
	for c, k := range d.ClassCounts() {
		info.Classes = append(info.Classes, classInfo{Name: d.ClassNames[c], Count: k})
		labelled += k
	}
	if d.Labels != nil {
		info.Unlabelled = info.Nodes - labelled
	}
	for _, s := range d.Splits {
		info.FixedSplits = append(info.FixedSplits, s.Name)
	}
	return info
}

func printInfo(w io.Writer, info dataInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\n", info.Name)
	if info.NodeIDs == "renumbered" {
		fmt.Fprintf(tw, "nodes\t%d (numbered 0..%d; the source's ids are kept)\n", info.Nodes, info.Nodes-1)
	} else {
		fmt.Fprintf(tw, "nodes\t%d\n", info.Nodes)
	}
	fmt.Fprintf(tw, "edges\t%d undirected (%d stored directed entries; symmetrised, no self loops)\n", info.UndirectedEdges, info.StoredEdges)
	if info.Features > 0 {
		storage := info.FeatureStorage
		if info.FeaturesMapped != "" {
			storage += fmt.Sprintf(" (%s, mapped from %s)", info.FeatureDType, info.FeaturesMapped)
		}
		fmt.Fprintf(tw, "features\t%d, %s, %d nonzeros (density %.4f)\n", info.Features, storage, info.FeatureNonzeros, info.FeatureDensity)
	} else {
		fmt.Fprintf(tw, "features\tnone\n")
	}
	if len(info.Classes) > 0 {
		parts := make([]string, len(info.Classes))
		for i, c := range info.Classes {
			parts[i] = fmt.Sprintf("%s %d", c.Name, c.Count)
		}
		line := fmt.Sprintf("%d: %s", len(info.Classes), strings.Join(parts, ", "))
		if info.Unlabelled > 0 {
			line += fmt.Sprintf("; %d unlabelled", info.Unlabelled)
		}
		fmt.Fprintf(tw, "classes\t%s\n", line)
	} else {
		fmt.Fprintf(tw, "classes\tnone (no labels)\n")
	}
	if len(info.FixedSplits) > 0 {
		fmt.Fprintf(tw, "fixed splits\t%s\n", strings.Join(info.FixedSplits, ", "))
	}
	if s := info.Split; s != nil {
		fmt.Fprintf(tw, "split %s\t%d train / %d val / %d test\n", s.Spec, s.Train, s.Val, s.Test)
	}
	g := info.Degree
	fmt.Fprintf(tw, "degree\tmin %d, mean %.2f, median %g, max %d; %d isolated\n", g.Min, g.Mean, g.Median, g.Max, g.Isolated)
	fmt.Fprintf(tw, "loaded in\t%.2fs (files read in %.2fs, peak memory %s)\n", info.LoadSeconds, info.ReadSeconds, formatBytes(info.ReadRSSBytes))
	return tw.Flush()
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ") + "\n"
}
