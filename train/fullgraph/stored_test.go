package fullgraph

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

func storedTask(t testing.TB, k int, sparse bool) (sbmTask, train.Problem, *partition.Layout) {
	s := newSBMTask(t, 300, 3)
	if sparse { // a sparse copy, with some rows empty
		d := s.x.Dense
		csr := &tensor.CSR{Rows: d.Rows, Cols: d.Cols, Offsets: make([]int64, d.Rows+1)}
		for i := range d.Rows {
			for j, v := range d.Row(i) {
				if i%7 != 0 && v > 0.5 {
					csr.Indices = append(csr.Indices, int32(j))
					csr.Values = append(csr.Values, v)
				}
			}
			csr.Offsets[i+1] = int64(len(csr.Indices))
		}
		s.x = nn.Features{Sparse: csr}
	}
	parts, err := partition.Random{}.Partition(s.g, k, partition.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(s.g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	p := train.Problem{Graph: s.g, Features: s.x, Labels: s.labels, Train: s.train, Val: s.val, Test: s.test}
	return s, p, layout
}

// source is p as the part store takes it.
func source(p train.Problem, classes int) partstore.Source {
	return partstore.Source{Graph: p.Graph, Features: p.Features, Labels: p.Labels, Classes: classes,
		Split: dataset.Split{Train: p.Train, Val: p.Val, Test: p.Test}}
}

// Stored parts train exactly like PartOf's parts: the same losses and
// parameters, bit for bit.
func TestStoredPartsTrainLikePartOf(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		const k = 3
		s, p, layout := storedTask(t, k, sparse)
		dir := t.TempDir()
		if err := partstore.Write(dir, partstore.Manifest{Dataset: "sbm", Split: "mod5", Method: "random"}, source(p, s.classes), layout, nil); err != nil {
			t.Fatal(err)
		}

		cfg := equivalenceConfig("gcn", s.classes)
		run := func(stored bool) ([]float64, []float32) {
			var losses []float64
			var params []float32
			_, tr, err := func() (train.Result, *train.Loop, error) {
				var res train.Result
				var tr *train.Loop
				err := comm.Run(k, func(c comm.Communicator) error {
					cb := func(m metrics.Epoch) error {
						if c.Rank() == 0 {
							losses = append(losses, m.Loss)
						}
						return nil
					}
					var r train.Result
					var tt *train.Loop
					var err error
					if stored {
						sp, rerr := partstore.ReadPart(dir, c.Rank())
						if rerr != nil {
							return rerr
						}
						r, tt, err = RunStoredWorker(context.Background(), c, cfg, sp, Options{}, cb)
					} else {
						r, tt, err = RunWorker(context.Background(), c, cfg, p, layout, Options{}, cb)
					}
					if c.Rank() == 0 {
						res, tr = r, tt
					}
					return err
				})
				return res, tr, err
			}()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tr.Model().Params() {
				params = append(params, p.Value.Data...)
			}
			return losses, params
		}
		l1, p1 := run(false)
		l2, p2 := run(true)
		if !reflect.DeepEqual(l1, l2) || !reflect.DeepEqual(p1, p2) {
			t.Errorf("sparse=%v: stored parts train differently:\n%v\n%v", sparse, l1, l2)
		}
	}
}

// Workers whose parts come from different partitions refuse to train.
func TestStoredPartsFromDifferentLayoutsRefused(t *testing.T) {
	s, p, layout := storedTask(t, 2, false)
	parts := make([]int32, s.g.N)
	for v := range parts {
		parts[v] = int32(v % 2)
	}
	layout2, err := partition.BuildLayout(s.g, parts, 2)
	if err != nil {
		t.Fatal(err)
	}
	a := partstore.Build(source(p, s.classes), &layout.Parts[0], partstore.Fingerprint(layout))
	b := partstore.Build(source(p, s.classes), &layout2.Parts[1], partstore.Fingerprint(layout2))
	err = comm.Run(2, func(c comm.Communicator) error {
		sp := a
		if c.Rank() == 1 {
			sp = b
		}
		_, _, err := RunStoredWorker(context.Background(), c, equivalenceConfig("gcn", s.classes), sp, Options{}, nil)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "different partition") {
		t.Fatalf("got %v", err)
	}
}

// FuzzStoredData: whatever part files the reader accepts can be turned
// into a worker's operators without a panic. The fuzzer works on the files
// without their checksum (CRC-32C, appended before decoding) so that
// mutations reach the validation.
func FuzzStoredData(f *testing.F) {
	g, err := graph.FromEdges(6, []int32{0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 0}, []int32{1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 0, 5}, graph.BuildOptions{})
	if err != nil {
		f.Fatal(err)
	}
	layout, err := partition.BuildLayout(g, []int32{0, 0, 1, 1, 0, 1}, 2)
	if err != nil {
		f.Fatal(err)
	}
	src := partstore.Source{Graph: g, Features: nn.DenseFeatures(tensor.New(6, 2)), Labels: []int32{0, 1, 0, 1, 0, 1}, Classes: 2,
		Split: dataset.Split{Train: []int32{0, 1}, Val: []int32{2}, Test: []int32{3, 4, 5}}}
	dir := f.TempDir()
	if _, err := partstore.WritePart(dir, partstore.Build(src, &layout.Parts[0], partstore.Fingerprint(layout))); err != nil {
		f.Fatal(err)
	}
	var seed [3][]byte
	for i, name := range []string{"topology.bin", "features.bin", "labels.bin"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		seed[i] = b[:len(b)-4]
	}
	f.Add(seed[0], seed[1], seed[2])
	table := crc32.MakeTable(crc32.Castagnoli)
	seal := func(b []byte) []byte {
		return binary.LittleEndian.AppendUint32(append([]byte(nil), b...), crc32.Checksum(b, table))
	}
	f.Fuzz(func(t *testing.T, topo, feats, labels []byte) {
		sp, err := partstore.Decode(seal(topo), seal(feats), seal(labels))
		if err != nil {
			return
		}
		storedData(sp, allOperators, nil)
	})
}
