package partstore

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// ring returns a six-node ring with two classes, dense or sparse features,
// split into two parts.
func ring(t testing.TB, sparse bool) (Source, *partition.Layout) {
	t.Helper()
	g, err := graph.FromEdges(6, []int32{0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 0}, []int32{1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 0, 5}, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(g, []int32{0, 0, 1, 1, 0, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.New(6, 3)
	for i := range x.Data {
		if i%4 != 0 {
			x.Data[i] = float32(i)
		}
	}
	feats := nn.DenseFeatures(x)
	if sparse {
		feats = nn.NewFeatures(x, nn.ForceSparse)
	}
	src := Source{Graph: g, Features: feats, Labels: []int32{0, 1, 0, 1, 0, 1}, Classes: 2,
		Split: dataset.Split{Train: []int32{0, 1}, Val: []int32{2}, Test: []int32{3, 4, 5}}}
	return src, layout
}

// Parts read back exactly as written, with the manifest describing them.
func TestPartsReadBackAsWritten(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		src, layout := ring(t, sparse)
		dir := t.TempDir()
		if err := Write(dir, Manifest{Dataset: "ring", Split: "fixed", Method: "given"}, src, layout, nil); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(dir)
		if err != nil || m.Parts != 2 || m.Nodes != 6 || m.Sparse != sparse || m.Classes != 2 || m.Features != 3 {
			t.Fatalf("manifest %+v, %v", m, err)
		}
		for i := range layout.K {
			got, err := ReadPart(dir, i)
			if err != nil {
				t.Fatal(err)
			}
			want := Build(src, &layout.Parts[i], Fingerprint(layout))
			if !reflect.DeepEqual(got.Part.Owned, want.Part.Owned) || !reflect.DeepEqual(got.Part.Send, want.Part.Send) ||
				!reflect.DeepEqual(got.ColDegree, want.ColDegree) || !reflect.DeepEqual(got.Features, want.Features) ||
				!reflect.DeepEqual(got.Part.Local, want.Part.Local) || got.Layout != want.Layout ||
				!reflect.DeepEqual(got.Labels, want.Labels) || !slices.Equal(got.Train, want.Train) || !slices.Equal(got.Test, want.Test) {
				t.Fatalf("sparse=%v: part %d does not read back as written:\n%+v\n%+v", sparse, i, got, want)
			}
		}
	}
}

// Corrupt, truncated or mismatched part files are refused with an error.
func TestPartsRefuseDamage(t *testing.T) {
	src, layout := ring(t, false)
	dir := t.TempDir()
	if err := Write(dir, Manifest{Dataset: "ring"}, src, layout, nil); err != nil {
		t.Fatal(err)
	}
	topo := filepath.Join(Dir(dir, 1), "topology.bin")
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
	os.Rename(Dir(dir, 0), Dir(dir, 9))
	os.Rename(Dir(dir, 1), Dir(dir, 0))
	if _, err := ReadPart(dir, 0); err == nil || !strings.Contains(err.Error(), "not the file the manifest describes") {
		t.Errorf("swapped part: %v", err)
	}
	if _, err := ReadManifest(t.TempDir()); err == nil {
		t.Error("a directory without a manifest was accepted")
	}
}

// FuzzDecode: no input makes the reader panic. The fuzzer works on the
// files without their checksum, which is added before decoding, so that
// mutations reach the validation.
func FuzzDecode(f *testing.F) {
	src, layout := ring(f, false)
	files := Build(src, &layout.Parts[0], Fingerprint(layout)).arrays()
	body := func(a []array) []byte { b := encodeArrays(a); return b[:len(b)-4] }
	f.Add(body(files[0]), body(files[1]), body(files[2]))
	f.Add([]byte(magic), []byte{}, []byte("GRAFTPT1\x01\x00\x00\x00"))
	seal := func(b []byte) []byte {
		return binary.LittleEndian.AppendUint32(append([]byte(nil), b...), crc32.Checksum(b, castagnoli))
	}
	f.Fuzz(func(t *testing.T, topo, feats, labels []byte) {
		Decode(topo, feats, labels) // unsealed: the checksum must refuse them
		Decode(seal(topo), seal(feats), seal(labels))
	})
}

// An array name of 255 bytes, the most its length byte can say, is read
// as such (a byte sum once wrapped it to 0, and the reader panicked).
func TestLongestArrayName(t *testing.T) {
	name := strings.Repeat("n", 255)
	b, err := decodeArrays(encodeArrays([]array{{name: name, i32: []int32{7}}}))
	if err != nil || len(b[name].i32) != 1 || b[name].i32[0] != 7 {
		t.Fatalf("read %v, %v", b, err)
	}
	body := encodeArrays([]array{{name: name, i32: []int32{7}}})
	for cut := len(magic) + 4; cut < len(body); cut++ { // every truncation of the sealed body errs
		sealed := binary.LittleEndian.AppendUint32(append([]byte(nil), body[:cut]...), crc32.Checksum(body[:cut], castagnoli))
		if _, err := decodeArrays(sealed); err == nil && cut < len(body)-4 {
			t.Fatalf("a body cut at %d of %d bytes was accepted", cut, len(body))
		}
	}
}

// A part's class count sizes the model's last layer and no array backs
// it, so it is bounded as the datasets' is: 2^31-1 classes built a model
// of 2^31 outputs and crashed.
func TestDecodeBoundsClasses(t *testing.T) {
	src, layout := ring(t, false)
	for _, tc := range []struct {
		classes int64
		want    string
	}{
		{1 << 15, ""},
		{1<<15 + 1, "topology.bin: 32769 classes"},
		{1<<31 - 1, "topology.bin: 2147483647 classes"},
	} {
		files := Build(src, &layout.Parts[0], Fingerprint(layout)).arrays()
		for i := range files[0] {
			if files[0][i].name == "meta" {
				files[0][i].i64[4] = tc.classes
			}
		}
		p, err := Decode(encodeArrays(files[0]), encodeArrays(files[1]), encodeArrays(files[2]))
		switch {
		case tc.want == "" && (err != nil || int64(p.Classes) != tc.classes):
			t.Errorf("%d classes: %v", tc.classes, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d classes: error %v, want one containing %q", tc.classes, err, tc.want)
		}
	}
}
