package dataset

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/atomicfile"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/parallel"
)

// FeatureDTypes are the value types GenerateDir writes features in.
var FeatureDTypes = []string{"fp32", "bf16"}

// Generated is what GenerateDir wrote.
type Generated struct {
	Dataset *Dataset // the structure, labels and split; no features
	Files   []string // the files written, in order
	// Features is the feature width and FeatureBytes the size of
	// features.npy's values (0: none).
	Features     int
	FeatureBytes int64
}

// GenerateDir writes the generated dataset spec describes (SyntheticSpecs)
// to dir in graft's .npy layout (ReadNPYDir), its features in dtype (fp32
// or bf16, rounded to nearest even). The structure is built in memory;
// the features are drawn and written a few chunks of rows at a time, never
// held whole. Reading dir back gives the dataset Load(spec) generates:
// the same graph, labels, public split and features (rounded, in bf16).
func GenerateDir(spec, dir, dtype string) (*Generated, error) {
	if dtype != "fp32" && dtype != "bf16" {
		return nil, fmt.Errorf("features dtype %q: want %s", dtype, strings.Join(FeatureDTypes, " or "))
	}
	if !IsSynthetic(spec) {
		return nil, fmt.Errorf("%q is not a generated dataset's spec; want one of:\n%s", spec, SyntheticSpecs)
	}
	var d *Dataset
	var src rowSource
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "sbm":
		cfg, seed, err := sbmConfig(spec, strings.Split(rest, ":"))
		if err != nil {
			return nil, err
		}
		// The features are written a chunk at a time, never held.
		if err := roomForGenerated(spec, int64(cfg.Nodes), int64(cfg.Nodes)*int64(cfg.AvgDegree)/2, 0); err != nil {
			return nil, err
		}
		g, labels, err := graph.SBMGraph(cfg, seed)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %v", spec, err)
		}
		if d, err = sbmWithSplit(spec, cfg, seed, g, nil, labels); err != nil {
			return nil, err
		}
		if cfg.Features > 0 {
			src = sbmRows{graph.NewSBMFeatures(cfg, labels, seed), cfg.Features}
		}
	default:
		var err error
		if d, err = loadSynthetic(spec); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := &Generated{Dataset: d}
	write := func(name string, w func(io.Writer) error) error {
		p := filepath.Join(dir, name)
		out.Files = append(out.Files, p)
		if err := atomicfile.Write(p, w); err != nil {
			return err
		}
		return os.Chmod(p, 0o644) // a dataset, not a secret

	}
	if err := writeNPYDirStructure(d, write); err != nil {
		return nil, err
	}
	if src != nil {
		out.Features = src.cols()
		out.FeatureBytes = int64(d.NumNodes()) * int64(src.cols()) * map[string]int64{"fp32": 4, "bf16": 2}[dtype]
		err := write(npyDirFeatures, func(w io.Writer) error { return writeNPYRows(w, src, d.NumNodes(), dtype == "bf16") })
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeNPYDirStructure writes the adjacency, labels and public split.
func writeNPYDirStructure(d *Dataset, write func(string, func(io.Writer) error) error) error {
	g := d.Graph
	if err := write(npyDirIndptr, func(w io.Writer) error { return writeNPYInts(w, g.Offsets) }); err != nil {
		return err
	}
	if err := write(npyDirIndices, func(w io.Writer) error { return writeNPYInts(w, g.Neighbors) }); err != nil {
		return err
	}
	if d.Labels != nil {
		if err := write(npyDirLabels, func(w io.Writer) error { return writeNPYInts(w, d.Labels) }); err != nil {
			return err
		}
	}
	if len(d.Splits) > 0 {
		s := d.Splits[0]
		for i, nodes := range [][]int32{s.Train, s.Val, s.Test} {
			if err := write(npyDirSplit[i], func(w io.Writer) error { return writeNPYInts(w, nodes) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowSource draws feature rows a chunk of consecutive rows at a time.
type rowSource interface {
	cols() int
	chunks() int
	chunkRows(k int) (lo, hi int)
	fill(k int, dst []float32)
}

type sbmRows struct {
	f *graph.SBMFeatures
	c int
}

func (s sbmRows) cols() int                  { return s.c }
func (s sbmRows) chunks() int                { return s.f.Chunks() }
func (s sbmRows) chunkRows(k int) (int, int) { return s.f.ChunkRows(k) }
func (s sbmRows) fill(k int, dst []float32)  { s.f.Fill(k, dst) }

// writeNPYRows writes the n×cols matrix of src as a .npy of float32 or
// bfloat16, drawing a few chunks in parallel and writing them in order.
func writeNPYRows(w io.Writer, src rowSource, n int, half bool) error {
	cols := src.cols()
	descr := "<f4"
	if half {
		descr = "<V2"
	}
	header, err := npyHeaderBytes(descr, []int{n, cols})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 4<<20)
	bw.Write(header)
	group := 2 * parallel.Workers()
	bufs := make([][]float32, group)
	var raw []byte
	var halves []uint16
	for k0 := 0; k0 < src.chunks(); k0 += group {
		k1 := min(k0+group, src.chunks())
		parallel.For(k1-k0, 1, rangeTask(func(lo, hi int) {
			for i := lo; i < hi; i++ {
				rlo, rhi := src.chunkRows(k0 + i)
				bufs[i] = grow(bufs[i], (rhi-rlo)*cols)
				src.fill(k0+i, bufs[i])
			}
		}))
		for i := range k1 - k0 {
			raw = raw[:0]
			if half {
				halves = grow(halves, len(bufs[i]))
				bf16.Encode(halves, bufs[i])
				for _, h := range halves {
					raw = binary.LittleEndian.AppendUint16(raw, h)
				}
			} else {
				for _, v := range bufs[i] {
					raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
				}
			}
			if _, err := bw.Write(raw); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// grow returns s with length n, reusing its storage when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
