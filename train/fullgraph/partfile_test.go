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
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

func storedTask(t testing.TB, k int, sparse bool) (sbmTask, Problem, *partition.Layout) {
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
	p := Problem{Graph: s.g, Features: s.x, Labels: s.labels, Train: s.train, Val: s.val, Test: s.test}
	return s, p, layout
}

// Stored parts read back as written, and train exactly like PartOf's parts:
// the same losses and parameters, bit for bit.
func TestStoredPartsTrainLikePartOf(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		const k = 3
		s, p, layout := storedTask(t, k, sparse)
		dir := t.TempDir()
		if err := WriteParts(dir, PartManifest{Dataset: "sbm", Split: "mod5", Method: "random", Classes: s.classes}, p, layout); err != nil {
			t.Fatal(err)
		}
		m, err := ReadPartManifest(dir)
		if err != nil || m.Parts != k || m.Nodes != 300 || m.Sparse != sparse || m.Classes != s.classes {
			t.Fatalf("manifest %+v, %v", m, err)
		}
		for i := range k {
			sp, err := ReadPart(dir, i)
			if err != nil {
				t.Fatal(err)
			}
			want := StorePart(p, s.classes, &layout.Parts[i], LayoutFingerprint(layout))
			if !reflect.DeepEqual(sp.Part.Owned, want.Part.Owned) || !reflect.DeepEqual(sp.Part.Send, want.Part.Send) ||
				!reflect.DeepEqual(sp.ColDegree, want.ColDegree) || !reflect.DeepEqual(sp.Features, want.Features) ||
				!reflect.DeepEqual(sp.Part.Local, want.Part.Local) || sp.Layout != want.Layout {
				t.Fatalf("part %d does not read back as written", i)
			}
		}

		cfg := equivalenceConfig("gcn", s.classes)
		run := func(stored bool) ([]float64, []float32) {
			var losses []float64
			var params []float32
			_, tr, err := func() (Result, *Trainer, error) {
				var res Result
				var tr *Trainer
				err := comm.Run(k, func(c comm.Communicator) error {
					cb := func(m DistMetrics) error {
						if c.Rank() == 0 {
							losses = append(losses, m.Loss)
						}
						return nil
					}
					var r Result
					var tt *Trainer
					var err error
					if stored {
						sp, rerr := ReadPart(dir, c.Rank())
						if rerr != nil {
							return rerr
						}
						r, tt, err = RunStoredWorker(context.Background(), c, cfg, sp, DistOptions{}, cb)
					} else {
						r, tt, err = RunWorker(context.Background(), c, cfg, p, layout, DistOptions{}, cb)
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

// Corrupt, truncated or mismatched part files are refused with an error.
func TestStoredPartsRefuseDamage(t *testing.T) {
	s, p, layout := storedTask(t, 2, false)
	dir := t.TempDir()
	if err := WriteParts(dir, PartManifest{Dataset: "sbm", Classes: s.classes}, p, layout); err != nil {
		t.Fatal(err)
	}
	topo := filepath.Join(PartDir(dir, 1), "topology.bin")
	b, _ := os.ReadFile(topo)
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)/2] ^= 1
	for name, data := range map[string][]byte{"flipped": flipped, "truncated": b[:len(b)-9], "empty": nil} {
		os.WriteFile(topo, data, 0o644)
		if _, err := ReadPart(dir, 1); err == nil || !strings.Contains(err.Error(), "topology.bin") {
			t.Errorf("%s: %v", name, err)
		}
	}
	os.WriteFile(topo, b, 0o644)
	if _, err := ReadPart(dir, 0); err != nil {
		t.Fatal(err)
	}
	// Part 1's files in part 0's place.
	os.Rename(PartDir(dir, 0), PartDir(dir, 9))
	os.Rename(PartDir(dir, 1), PartDir(dir, 0))
	if _, err := ReadPart(dir, 0); err == nil || !strings.Contains(err.Error(), "says it is part 1") {
		t.Errorf("swapped part: %v", err)
	}
	if _, err := ReadPartManifest(t.TempDir()); err == nil {
		t.Error("a directory without a manifest was accepted")
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
	a := StorePart(p, s.classes, &layout.Parts[0], LayoutFingerprint(layout))
	b := StorePart(p, s.classes, &layout2.Parts[1], LayoutFingerprint(layout2))
	err = comm.Run(2, func(c comm.Communicator) error {
		sp := a
		if c.Rank() == 1 {
			sp = b
		}
		_, _, err := RunStoredWorker(context.Background(), c, equivalenceConfig("gcn", s.classes), sp, DistOptions{}, nil)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "different partition") {
		t.Fatalf("got %v", err)
	}
}

// FuzzDecodePart: no input makes the reader panic, and what it accepts can
// be turned into a worker's operators.
func FuzzDecodePart(f *testing.F) {
	g, err := graph.FromEdges(6, []int32{0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 0}, []int32{1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 0, 5}, graph.BuildOptions{})
	if err != nil {
		f.Fatal(err)
	}
	layout, err := partition.BuildLayout(g, []int32{0, 0, 1, 1, 0, 1}, 2)
	if err != nil {
		f.Fatal(err)
	}
	x := nn.DenseFeatures(tensor.New(6, 2))
	p := Problem{Graph: g, Features: x, Labels: []int32{0, 1, 0, 1, 0, 1}, Train: []int32{0, 1}, Val: []int32{2}, Test: []int32{3, 4, 5}}
	sp := StorePart(p, 2, &layout.Parts[0], LayoutFingerprint(layout))
	// The fuzzer works on the files without their checksum, which is
	// added before decoding, so that mutations reach the validation.
	files := sp.arrays()
	body := func(a []array) []byte { b := encodeArrays(a); return b[:len(b)-4] }
	f.Add(body(files[0]), body(files[1]), body(files[2]))
	f.Add([]byte(partMagic), []byte{}, []byte("GRAFTPT1\x01\x00\x00\x00"))
	seal := func(b []byte) []byte {
		return binary.LittleEndian.AppendUint32(append([]byte(nil), b...), crc32.Checksum(b, castagnoli))
	}
	f.Fuzz(func(t *testing.T, topo, feats, labels []byte) {
		DecodePart(topo, feats, labels) // unsealed: the checksum must refuse them
		sp, err := DecodePart(seal(topo), seal(feats), seal(labels))
		if err != nil {
			return
		}
		if _, err := sp.Data(nil); err != nil {
			return
		}
	})
}
