package dataset_test

import (
	"fmt"
	"log"

	"github.com/graft-gnn/graft/dataset"
)

func ExampleLoad() {
	// Cora is built in: no data directory is needed.
	d, err := dataset.Load("cora", "")
	if err != nil {
		log.Fatal(err)
	}
	split, err := d.Split("random:20:30", 42)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.NumNodes(), d.NumUndirectedEdges(), d.NumFeatures(), d.NumClasses)
	fmt.Println(len(split.Train), len(split.Val), len(split.Test))
	// Output:
	// 2708 5278 1433 7
	// 140 210 2358
}
