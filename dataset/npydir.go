package dataset

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
)

// A dataset directory in graft's .npy layout holds one .npy file per
// array, each readable with numpy.load:
//
//	adj_indptr.npy   (N+1,) integers: the adjacency's CSR row offsets
//	adj_indices.npy  (E,) integers: each row's neighbours
//	features.npy     (N, F) float32, or bfloat16 as ml_dtypes saves it (<V2); optional
//	labels.npy       (N,) integer class per node, -1 unlabelled; optional
//	train.npy, val.npy, test.npy  node ids of the public split; optional
//
// The adjacency is read as the dataset convention has it (both directions,
// sorted rows, no duplicates or self loops) when it already is, and made so
// otherwise. Every array is read a chunk at a time into the form graft
// keeps, and the features may be mapped instead (Mapping).
const (
	npyDirIndptr   = "adj_indptr.npy"
	npyDirIndices  = "adj_indices.npy"
	npyDirFeatures = "features.npy"
	npyDirLabels   = "labels.npy"
	npyDirGraph    = npyDirIndptr + " and " + npyDirIndices
)

// npyDirSplit names the split files, in Split's order.
var npyDirSplit = [3]string{"train.npy", "val.npy", "test.npy"}

// isNPYDir reports whether dir holds a dataset in the .npy layout.
func isNPYDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, npyDirIndptr))
	return err == nil
}

// ReadNPYDir reads a dataset directory in graft's .npy layout, its
// features mapped or read as mode says. The dataset is named after the
// directory.
func ReadNPYDir(dir string, mode Mapping) (*Dataset, error) {
	g, err := readNPYDirGraph(dir)
	if err != nil {
		return nil, err
	}
	d := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Graph: g}
	if p := filepath.Join(dir, npyDirLabels); exists(p) {
		labels, k, err := readNPYLabels(p, g.N)
		if err != nil {
			return nil, err
		}
		d.Labels, d.NumClasses, d.ClassNames = labels, k, numberedClasses(k)
	}
	if p := filepath.Join(dir, npyDirFeatures); exists(p) {
		if err := d.readNPYFeatureFile(p, mode); err != nil {
			return nil, err
		}
	}
	if err := d.readNPYDirSplit(dir); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return d, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readNPYDirGraph reads the adjacency, keeping it as it is when it already
// follows the dataset convention.
func readNPYDirGraph(dir string) (*graph.Graph, error) {
	indptr, err := readNPYInt64s(filepath.Join(dir, npyDirIndptr))
	if err != nil {
		return nil, err
	}
	if len(indptr) == 0 || len(indptr)-1 > graph.MaxNodes {
		return nil, fmt.Errorf("%s: %d row offsets, want N+1 for N from 0 to %d nodes", filepath.Join(dir, npyDirIndptr), len(indptr), graph.MaxNodes)
	}
	indices, err := readNPYInt32s(filepath.Join(dir, npyDirIndices))
	if err != nil {
		return nil, err
	}
	g := &graph.Graph{N: len(indptr) - 1, Offsets: indptr, Neighbors: indices}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", dir, npyDirGraph, err)
	}
	if canonical(g) {
		return g, nil
	}
	// Make it undirected, sorted, without duplicates or self loops.
	src := make([]int32, len(indices))
	for v := range g.N {
		for p := indptr[v]; p < indptr[v+1]; p++ {
			src[p] = int32(v)
		}
	}
	return undirected(g.N, src, indices)
}

// canonical reports whether g is as the dataset convention stores graphs:
// every row strictly increasing (sorted, no duplicates), no self loop, and
// every edge stored in both directions. Symmetry is checked in one pass
// over the edges, without looking anything up: the sum of a keyed hash of
// every edge (v, u) must equal that of every reversed edge (u, v), which
// holds when the two are the same set and, for a key drawn at random, is
// otherwise a 2^-64 chance. (Looking each reversed edge up in its row
// took 0.5 µs an edge, a cache miss or more each.)
func canonical(g *graph.Graph) bool {
	key := rand.Uint64()
	var bad atomic.Bool
	var fwd, rev atomic.Uint64
	parallel.For(g.N, 1<<12, rangeTask(func(lo, hi int) {
		var f, r uint64
		for v := lo; v < hi && !bad.Load(); v++ {
			row := g.Adj(v)
			for i, u := range row {
				if int(u) == v || i > 0 && row[i-1] >= u {
					bad.Store(true)
					return
				}
				f += mix64(key ^ uint64(v)<<32 ^ uint64(u))
				r += mix64(key ^ uint64(u)<<32 ^ uint64(v))
			}
		}
		fwd.Add(f)
		rev.Add(r)
	}))
	return !bad.Load() && fwd.Load() == rev.Load()
}

// mix64 is splitmix64's finaliser, a bijection that scatters every input
// bit over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// readNPYDirSplit reads the public split, if the directory has one.
func (d *Dataset) readNPYDirSplit(dir string) error {
	var sets [3][]int32
	found := 0
	for i, name := range npyDirSplit {
		p := filepath.Join(dir, name)
		if !exists(p) {
			continue
		}
		found++
		var err error
		if sets[i], err = readNPYInt32s(p); err != nil {
			return err
		}
	}
	switch {
	case found == 0:
		return nil
	case sets[0] == nil:
		return fmt.Errorf("%s: a split needs %s (with %s and %s if it has them)", dir, npyDirSplit[0], npyDirSplit[1], npyDirSplit[2])
	case d.Labels == nil:
		return fmt.Errorf("%s: a split but no %s", dir, npyDirLabels)
	}
	s := Split{Name: "public", Train: sets[0], Val: sets[1], Test: sets[2]}
	s.sort()
	d.Splits = []Split{s}
	return nil
}

// rangeTask adapts a closure to parallel.Task.
type rangeTask func(lo, hi int)

func (f rangeTask) Run(lo, hi int) { f(lo, hi) }
