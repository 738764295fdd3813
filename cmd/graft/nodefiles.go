package main

import (
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/graft-gnn/graft/dataset"
)

// storageNames are the values of train's --features that choose how
// features are stored rather than name a file of them.
var storageNames = []string{"auto", "dense", "sparse"}

// registerNodeFiles adds the flags that give a dataset labels and features
// from files: every command that loads a dataset takes them. With storage
// set (graft train), --features also takes auto, dense or sparse: how the
// features are stored.
func registerNodeFiles(fs *flag.FlagSet, files *dataset.NodeFiles, storage *string) {
	fs.StringVar(&files.Labels, "labels", "", "read node labels from `FILE`: an id,label CSV keyed by the graph's node ids, or a .npy of one label per node (-1: unlabelled)")
	usage := "read node features from `FILE`: a 2-D .npy, a scipy.sparse .npz, or CSV rows (id,f1,f2,... keyed by node id, or one row per node in node order)"
	if storage != nil {
		usage = "input features (default: the recipe's): auto (stored sparse below 10% density), dense or sparse, or a `FILE` to read them from: a 2-D .npy, a scipy.sparse .npz, or CSV rows (id,f1,f2,... keyed by node id, or one row per node in node order)"
	}
	fs.Var(featuresValue{file: &files.Features, storage: storage}, "features", usage)
	fs.Var(mappingValue{&files.Map}, "features-mmap", "map a .npy feature file (--features, or a dataset directory's) into memory instead of reading it: its rows are read from the page cache as training uses them (default: when the file is over half the memory available; =false always reads)")
}

// mappingValue is --features-mmap: a boolean flag whose default, auto,
// is neither.
type mappingValue struct{ m *dataset.Mapping }

func (v mappingValue) IsBoolFlag() bool { return true }

func (v mappingValue) String() string {
	if v.m == nil {
		return "auto"
	}
	return map[dataset.Mapping]string{dataset.MapAuto: "auto", dataset.MapAlways: "true", dataset.MapNever: "false"}[*v.m]
}

func (v mappingValue) Set(s string) error {
	switch s {
	case "true", "1":
		*v.m = dataset.MapAlways
	case "false", "0":
		*v.m = dataset.MapNever
	case "auto":
		*v.m = dataset.MapAuto
	default:
		return fmt.Errorf("want true, false or auto, not %q", s)
	}
	return nil
}

// featuresValue is --features: a storage name (when the command has
// storage) or a file.
type featuresValue struct{ file, storage *string }

func (v featuresValue) String() string {
	if v.file != nil && *v.file != "" {
		return *v.file
	}
	if v.storage != nil {
		return *v.storage
	}
	return ""
}

func (v featuresValue) Set(s string) error {
	if v.storage != nil && slices.Contains(storageNames, s) {
		*v.storage = s
		return nil
	}
	if v.storage != nil {
		if _, err := os.Stat(s); err != nil {
			return fmt.Errorf("want auto, dense or sparse, or a file of features (%v)", err)
		}
	}
	*v.file = s
	return nil
}
