package main

import (
	"flag"

	"github.com/graft-gnn/graft/dataset"
)

// registerNodeFiles adds the flags that give a dataset labels and features
// from files: every command that loads a dataset takes them.
func registerNodeFiles(fs *flag.FlagSet, files *dataset.NodeFiles) {
	fs.StringVar(&files.Labels, "labels", "", "read node labels from `FILE`: an id,label CSV keyed by the graph's node ids, or a .npy of one label per node (-1: unlabelled)")
	fs.StringVar(&files.Features, "feature-file", "", "read node features from `FILE`: a 2-D .npy, a scipy.sparse .npz, or CSV rows (id,f1,f2,... keyed by node id, or one row per node in node order)")
}
