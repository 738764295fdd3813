package dataset

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

const smallSBM = "sbm:3000:8:24:4:7"

// readDir reads a .npy dataset directory, unmapping it when the test ends.
func readDir(t *testing.T, dir string, mode Mapping) *Dataset {
	t.Helper()
	d, err := ReadNPYDir(dir, mode)
	if err != nil {
		t.Fatal(err)
	}
	if d.Mapped != nil {
		t.Cleanup(func() { d.Mapped.Close() })
	}
	return d
}

// A generated directory, read or mapped, is the dataset the spec
// generates in memory: graph, labels, classes, public split and features.
func TestGenerateDirEqualsInMemory(t *testing.T) {
	want, err := Load(smallSBM, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gen, err := GenerateDir(smallSBM, dir, "fp32")
	if err != nil {
		t.Fatal(err)
	}
	if gen.FeatureBytes != int64(4*want.Dense.Rows*want.Dense.Cols) || len(gen.Files) != 7 {
		t.Fatalf("wrote %d files, %d feature bytes", len(gen.Files), gen.FeatureBytes)
	}
	for _, mode := range []Mapping{MapNever, MapAlways} {
		got := readDir(t, dir, mode)
		if (got.Mapped != nil) != (mode == MapAlways) {
			t.Fatalf("mode %d: mapped %v", mode, got.Mapped != nil)
		}
		if !reflect.DeepEqual(got.Graph, want.Graph) || !reflect.DeepEqual(got.Labels, want.Labels) ||
			got.NumClasses != want.NumClasses || !reflect.DeepEqual(got.ClassNames, want.ClassNames) ||
			!reflect.DeepEqual(got.Splits, want.Splits) {
			t.Fatalf("mode %d: the structure, labels or split differ from %s's", mode, smallSBM)
		}
		if !reflect.DeepEqual(got.Dense.Data, want.Dense.Data) || got.Dense.Cols != want.Dense.Cols {
			t.Fatalf("mode %d: the features differ from %s's", mode, smallSBM)
		}
	}
}

// bf16 features are the in-memory features rounded to bfloat16: mapped,
// as they are; read, widened back to float32.
func TestGenerateDirBF16(t *testing.T) {
	want, err := Load(smallSBM, "")
	if err != nil {
		t.Fatal(err)
	}
	rounded := tensor.MatrixToBF16(want.Dense)
	dir := t.TempDir()
	if _, err := GenerateDir(smallSBM, dir, "bf16"); err != nil {
		t.Fatal(err)
	}
	mapped := readDir(t, dir, MapAlways)
	if mapped.Dense != nil || mapped.DenseBF16 == nil || !reflect.DeepEqual(mapped.DenseBF16.Data, rounded.Data) {
		t.Fatal("mapped bf16 features are not the rounded in-memory features")
	}
	if mapped.NumFeatures() != want.NumFeatures() {
		t.Fatalf("%d features, want %d", mapped.NumFeatures(), want.NumFeatures())
	}
	read := readDir(t, dir, MapNever)
	widened := make([]float32, len(rounded.Data))
	tensor.FromBF16(widened, rounded.Data)
	if !reflect.DeepEqual(read.Dense.Data, widened) {
		t.Fatal("read bf16 features are not the rounded features widened")
	}
}

// A structure-only generator writes the adjacency alone.
func TestGenerateDirRMAT(t *testing.T) {
	want, err := Load("rmat:10:3000:2", "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gen, err := GenerateDir("rmat:10:3000:2", dir, "fp32")
	if err != nil {
		t.Fatal(err)
	}
	got := readDir(t, dir, MapAuto)
	if len(gen.Files) != 2 || gen.FeatureBytes != 0 || !reflect.DeepEqual(got.Graph, want.Graph) || got.Labels != nil || got.NumFeatures() != 0 {
		t.Fatalf("wrote %v; read %d nodes, labels %v, %d features", gen.Files, got.NumNodes(), got.Labels != nil, got.NumFeatures())
	}
}

func TestGenerateDirRefuses(t *testing.T) {
	for _, tc := range []struct{ spec, dtype, want string }{
		{"cora", "fp32", "not a generated dataset"},
		{smallSBM, "fp16", "want fp32 or bf16"},
		{"sbm:10:2", "fp32", "want sbm:NODES"},
	} {
		if _, err := GenerateDir(tc.spec, t.TempDir(), tc.dtype); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GenerateDir(%s, %s): %v, want %q", tc.spec, tc.dtype, err, tc.want)
		}
	}
}

// An adjacency stored one way round, unsorted and with a duplicate and a
// self loop is made undirected as every reader does.
func TestNPYDirNonCanonicalAdjacency(t *testing.T) {
	dir := t.TempDir()
	// Rows: 0 → 2, 1, 1, 0; 1 → (none); 2 → 3; 3 → (none).
	writeTestFile(t, filepath.Join(dir, npyDirIndptr), npyBytes("<i8", false, []int{5}, le([]int64{0, 4, 4, 5, 5})))
	writeTestFile(t, filepath.Join(dir, npyDirIndices), npyBytes("<i4", false, []int{5}, le([]int32{2, 1, 1, 0, 3})))
	d, err := ReadNPYDir(dir, MapAuto)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := graph.FromEdges(4, []int32{0, 0, 2}, []int32{1, 2, 3}, graph.BuildOptions{Symmetrize: true})
	if !reflect.DeepEqual(d.Graph, want) {
		t.Fatalf("graph %+v, want %+v", d.Graph, want)
	}
}

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Bad feature files are refused with their reason before any value is
// read or mapped; a truncated one never reaches the mapping.
func TestMapFeaturesRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := npyBytes("<f4", false, []int{3, 2}, le([]float32{1, 2, 3, 4, 5, 6}))
	nan := npyBytes("<f4", false, []int{3, 2}, le([]float32{1, 2, 3, float32(math.NaN()), 5, 6}))
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated", good[:len(good)-3], "truncated"},
		{"header cut", good[:20], "header"},
		{"not npy", []byte("hello, world"), "magic"},
		{"rows", npyBytes("<f4", false, []int{2, 3}, le([]float32{1, 2, 3, 4, 5, 6})), "want (3, F)"},
		{"float64", npyBytes("<f8", false, []int{3, 1}, le([]float64{1, 2, 3})), "cannot be mapped"},
		{"ints", npyBytes("<i4", false, []int{3, 1}, le([]int32{1, 2, 3})), "cannot be mapped"},
		{"nan", nan, "row 1, column 1"},
		{"bf16 inf", npyBytes("<V2", false, []int{3, 1}, le([]uint16{0x3f80, 0x7f80, 0})), "row 1, column 0"},
	} {
		p := filepath.Join(dir, tc.name+".npy")
		writeTestFile(t, p, tc.b)
		if m, err := MapFeatures(p, 3); err == nil || !strings.Contains(err.Error(), tc.want) {
			if m != nil {
				m.Close()
			}
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	p := filepath.Join(dir, "good.npy")
	writeTestFile(t, p, good)
	m, err := MapFeatures(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !reflect.DeepEqual(m.Float32().Data, []float32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("mapped %v", m.Float32().Data)
	}
}

// A truncated or non-finite file is refused when read too.
func TestReadNPYFeaturesRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := npyBytes("<f4", false, []int{3, 2}, le([]float32{1, 2, 3, 4, 5, 6}))
	inf := npyBytes("<f8", false, []int{3, 2}, le([]float64{1, 2, 3, 4, math.Inf(1), 6}))
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{"truncated": {good[:len(good)-1], "truncated"}, "inf": {inf, "row 2, column 0"}} {
		p := filepath.Join(dir, name+".npy")
		writeTestFile(t, p, tc.b)
		d := &Dataset{Graph: &graph.Graph{N: 3, Offsets: make([]int64, 4)}}
		if err := d.readFeatures(p, MapNever); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

// Features too large to read are refused naming the way out: mapping a
// float32 file, or first saving a float16 or integer one, which cannot be
// mapped, as bfloat16 or float32 (--features-mmap alone then refused it).
func TestReadNPYFeaturesTooLargeSaysHow(t *testing.T) {
	defer func(f func() (int64, bool)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, bool) { return 16, true }
	dir := t.TempDir()
	for descr, want := range map[string]string{
		"<f4": "map the file instead (--features-mmap)",
		"<f2": "a <f2 file cannot be mapped: save it as bfloat16",
		"<i8": "a <i8 file cannot be mapped: save it as bfloat16",
	} {
		p := filepath.Join(dir, descr[1:]+".npy")
		writeTestFile(t, p, npyBytes(descr, false, []int{4, 2}, make([]byte, 4*2*int(descr[2]-'0'))))
		d := &Dataset{Graph: &graph.Graph{N: 4, Offsets: make([]int64, 5)}}
		if err := d.readFeatures(p, MapNever); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error with %q", descr, err, want)
		}
	}
}

// MapAuto maps a file larger than half the memory available, and says so.
func TestMapAuto(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.npy")
	writeTestFile(t, p, npyBytes("<f4", false, []int{4, 256}, make([]byte, 4*4*256)))
	defer func(f func() (int64, bool)) { availableMemory = f }(availableMemory)
	for _, avail := range []int64{1 << 30, 4096} {
		availableMemory = func() (int64, bool) { return avail, true }
		d := &Dataset{Graph: &graph.Graph{N: 4, Offsets: make([]int64, 5)}}
		if err := d.ReadFeatures(p); err != nil {
			t.Fatal(err)
		}
		if mapped := d.Mapped != nil; mapped != (avail == 4096) {
			t.Fatalf("%d bytes available: mapped %v", avail, mapped)
		}
		if d.Mapped != nil {
			if !d.Mapped.Auto || d.Mapped.Available != avail || d.Dense.Rows != 4 {
				t.Fatalf("auto %v, available %d", d.Mapped.Auto, d.Mapped.Available)
			}
			d.Mapped.Close()
		}
	}
}

// WillNeed advises each page holding a requested row once, whatever the
// order and repetition of the rows; Resident counts the mapping's pages.
func TestWillNeed(t *testing.T) {
	page := os.Getpagesize()
	cols := page / 4 // one row a page, after a header shorter than one
	rows := 10
	p := filepath.Join(t.TempDir(), "x.npy")
	b := npyBytes("<f4", false, []int{rows, cols}, make([]byte, 4*rows*cols))
	writeTestFile(t, p, b)
	m, err := MapFeatures(p, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// Rows 3 and 4 span pages 3-5 (each row straddles a page boundary);
	// row 8 pages 8-9.
	m.WillNeed([]int32{8, 4, 3, 4})
	if got := m.TouchedPages(); got != 5 {
		t.Fatalf("advised %d pages, want 5", got)
	}
	if res, size, ok := m.Resident(); ok && (res < 0 || res > size || size != int64(len(b))) {
		t.Fatalf("resident %d of %d", res, size)
	}
}

// canonical accepts the graphs the builder makes and refuses one edge
// stored in one direction only, however sorted its rows.
func TestCanonical(t *testing.T) {
	d, err := Load(smallSBM, "")
	if err != nil {
		t.Fatal(err)
	}
	if !canonical(d.Graph) {
		t.Fatal("a built graph is not canonical")
	}
	// 0-1 both ways, 1-2 stored only as 1 → 2.
	g := &graph.Graph{N: 3, Offsets: []int64{0, 1, 3, 3}, Neighbors: []int32{1, 0, 2}}
	if canonical(g) {
		t.Fatal("an edge stored one way round passed as undirected")
	}
	g.Offsets, g.Neighbors = []int64{0, 1, 3, 4}, []int32{1, 0, 2, 1}
	if !canonical(g) {
		t.Fatal("the path 0-1-2 is not canonical")
	}
}

// FuzzNPYDir reads a .npy directory of any adjacency, features and labels
// files, read and mapped: an error or a valid dataset, never a panic.
func FuzzNPYDir(f *testing.F) {
	f.Add(npyBytes("<i8", false, []int{4}, le([]int64{0, 1, 2, 2})), npyBytes("<i4", false, []int{2}, le([]int32{1, 0})),
		npyBytes("<f4", false, []int{3, 1}, le([]float32{1, 2, 3})), npyBytes("<i4", false, []int{3}, le([]int32{0, 1, -1})))
	f.Add(npyBytes("<i4", false, []int{3}, le([]int32{0, 2, 2})), npyBytes("<i8", false, []int{2}, le([]int64{1, 1})),
		npyBytes("<V2", false, []int{2, 2}, le([]uint16{0x3f80, 0, 0x7fc0, 1})), []byte("not npy"))
	f.Fuzz(func(t *testing.T, indptr, indices, features, labels []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{npyDirIndptr: indptr, npyDirIndices: indices, npyDirFeatures: features, npyDirLabels: labels} {
			writeTestFile(t, filepath.Join(dir, name), b)
		}
		for _, mode := range []Mapping{MapNever, MapAlways} {
			d, err := ReadNPYDir(dir, mode)
			if err != nil {
				continue
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("mode %d: an invalid dataset: %v", mode, err)
			}
			if d.Mapped != nil {
				d.Mapped.Close()
			}
		}
	})
}

// Advice on misses advises a batch's pages when the process has read
// from storage since the last batch, and not when it has not.
func TestAdviceOnMisses(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.npy")
	writeTestFile(t, p, npyBytes("<f4", false, []int{4, 2}, make([]byte, 32)))
	m, err := MapFeatures(p, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer func(f func() (int64, bool)) { storageReadBytes = f }(storageReadBytes)
	reads := int64(0)
	storageReadBytes = func() (int64, bool) { return reads, true }
	for i, r := range []int64{100, 100, 100, 250, 250} { // advise, no, no, advise, no
		reads = r
		m.WillNeed([]int32{1})
		if want := []int64{1, 1, 1, 2, 2}[i]; m.AdvisedCalls() != want {
			t.Fatalf("after call %d (reads %d): %d calls advised, want %d", i+1, r, m.AdvisedCalls(), want)
		}
	}
	for s, want := range map[string]Advice{"": AdviseOnMisses, "auto": AdviseOnMisses, "on": AdviseAlways, "off": AdviseNever} {
		if a, err := ParseAdvice(s); err != nil || a != want || (s != "" && a.String() != s) {
			t.Errorf("ParseAdvice(%q) = %v, %v", s, a, err)
		}
	}
	if _, err := ParseAdvice("yes"); err == nil {
		t.Error("ParseAdvice(yes) did not fail")
	}
	m.Advice = AdviseNever
	m.WillNeed([]int32{2})
	if m.AdvisedCalls() != 2 || m.TouchedPages() != 6 {
		t.Fatalf("never: %d calls advised, %d pages touched", m.AdvisedCalls(), m.TouchedPages())
	}
}
