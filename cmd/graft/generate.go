package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/sysstat"
)

// generateInfo is what `graft data generate` reports; --json prints it.
type generateInfo struct {
	Spec         string   `json:"spec"`
	Dir          string   `json:"dir"`
	Files        []string `json:"files"`
	Nodes        int      `json:"nodes"`
	StoredEdges  int64    `json:"stored_directed_edges"`
	Features     int      `json:"features"`
	FeatureDType string   `json:"feature_dtype"`
	FeatureBytes int64    `json:"feature_bytes"`
	Classes      int      `json:"classes"`
	Seconds      float64  `json:"seconds"`
	PeakRSSBytes int64    `json:"peak_rss_bytes"`
}

func runDataGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data generate")
	out := fs.String("out", "", "directory to write the dataset to, in graft's .npy layout (created if missing; its files are replaced)")
	dtype := fs.String("features-dtype", "fp32", "the features' value type: fp32, or bf16 (rounded to nearest even; half the bytes, for --precision bf16)")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	rest, err := parseInterspersed(fs, args, stderr)
	if err != nil {
		return err
	}
	switch {
	case len(rest) != 1:
		return usageError{fmt.Errorf("data generate takes one generated dataset's spec:\n%s", indent(dataset.SyntheticSpecs))}
	case *out == "":
		return usageError{errors.New("data generate needs --out DIR")}
	case *dtype != "fp32" && *dtype != "bf16":
		return usageError{fmt.Errorf("--features-dtype %q: want %s", *dtype, strings.Join(dataset.FeatureDTypes, " or "))}
	case !dataset.IsSynthetic(rest[0]):
		return usageError{fmt.Errorf("%q is not a generated dataset's spec; want one of:\n%s", rest[0], indent(dataset.SyntheticSpecs))}
	}
	sysstat.ResetPeakRSS()
	start := time.Now()
	gen, err := dataset.GenerateDir(rest[0], *out, *dtype)
	if err != nil {
		return err
	}
	d := gen.Dataset
	info := generateInfo{Spec: rest[0], Dir: *out, Files: gen.Files, Nodes: d.NumNodes(), StoredEdges: d.Graph.NumEdges(),
		Features:     int(gen.FeatureBytes / max(1, int64(d.NumNodes())) / map[string]int64{"fp32": 4, "bf16": 2}[*dtype]),
		FeatureDType: *dtype, FeatureBytes: gen.FeatureBytes, Classes: d.NumClasses,
		Seconds: time.Since(start).Seconds(), PeakRSSBytes: sysstat.PeakRSS()}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	fmt.Fprintf(stdout, "wrote %s to %s: %d nodes, %d stored edges, ", info.Spec, info.Dir, info.Nodes, info.StoredEdges)
	if info.Features > 0 {
		fmt.Fprintf(stdout, "%d features (%s, %s), ", info.Features, info.FeatureDType, formatBytes(info.FeatureBytes))
	}
	fmt.Fprintf(stdout, "%d classes, %d files in %.1fs (peak memory %s)\n", info.Classes, len(info.Files), info.Seconds, formatBytes(info.PeakRSSBytes))
	fmt.Fprintf(stdout, "train on it with: graft train --dataset %s\n", info.Dir)
	return nil
}
