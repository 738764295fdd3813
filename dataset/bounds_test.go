package dataset

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
)

// zeroBomb is a deflate stream of n MiB of zeros, about 1 KiB per MiB: one
// compressed mebibyte, flushed to a byte boundary, repeated, then the
// final block.
func zeroBomb(prefix []byte, mib int) []byte {
	var one, out bytes.Buffer
	w, _ := flate.NewWriter(&one, flate.BestCompression)
	w.Write(make([]byte, 1<<20))
	w.Flush()
	block := bytes.Clone(one.Bytes())
	var head bytes.Buffer
	hw, _ := flate.NewWriter(&head, flate.BestCompression)
	hw.Write(prefix)
	hw.Flush()
	out.Write(head.Bytes())
	for range mib {
		out.Write(block)
	}
	one.Reset()
	w.Reset(&one)
	w.Close()
	out.Write(one.Bytes())
	return out.Bytes()
}

// bombNPZ is tinyBenchmarkNPZ with one more member, name, whose .npy
// header declares shape (mib·2^18,) of <f4, all zeros, deflated to a few
// hundred KiB: its sizes are honest, only its shape is wrong.
func bombNPZ(name string, mib int) []byte { return bombInto(tinyBenchmarkNPZ(true), name, mib) }

// bombInto is the archive base with its member name, if any, replaced by
// the bomb of bombNPZ.
func bombInto(base []byte, name string, mib int) []byte {
	small, _ := zip.NewReader(bytes.NewReader(base), int64(len(base)))
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range small.File {
		if f.Name == name+".npy" {
			continue
		}
		zw.Copy(f)
	}
	hdr := npyBytes("<f4", false, []int{mib << 18}, nil)
	crc := crc32.NewIEEE()
	crc.Write(hdr)
	zero := make([]byte, 1<<20)
	for range mib {
		crc.Write(zero)
	}
	body := zeroBomb(hdr, mib)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name + ".npy", Method: zip.Deflate, CRC32: crc.Sum32(),
		CompressedSize64: uint64(len(body)), UncompressedSize64: uint64(len(hdr) + mib<<20)})
	if err != nil {
		panic(err)
	}
	w.Write(body)
	zw.Close()
	return b.Bytes()
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A member whose header declares far more data than the layout can use
// (labels for 2^28 nodes of a 4-node graph) is refused from its header,
// before anything is inflated.
func TestNPZLayoutCheckedBeforeInflating(t *testing.T) {
	const mib = 1024
	b := bombNPZ("labels", mib)
	if len(b) > 2<<20 {
		t.Fatalf("the bomb is %d bytes", len(b))
	}
	var err error
	n := allocated(func() { _, err = ParseNPZDataset("bomb", "bomb.npz", b) })
	if err == nil || !strings.Contains(err.Error(), "bomb.npz: array labels has shape (268435456,)") || !strings.Contains(err.Error(), "4 nodes") {
		t.Fatalf("err = %v", err)
	}
	if n > 16<<20 {
		t.Fatalf("refusing a %d-byte archive allocated %d MiB", len(b), n>>20)
	}
}

// One large node id in a tiny edge list would make a graph of 2^31 nodes
// (16 GiB of offsets): the file's few edges cannot justify it.
func TestEdgeListNodeCountBoundedByItsEdges(t *testing.T) {
	_, err := ParseEdgeList("big.txt", strings.NewReader("0 1\n1 2147483646\n"), 0)
	if err == nil || !strings.Contains(err.Error(), "big.txt: line 2: node id 2147483646") || !strings.Contains(err.Error(), "relabel") {
		t.Fatalf("err = %v", err)
	}
	// Isolated nodes up to the bound are fine.
	el, err := ParseEdgeList("ok.txt", strings.NewReader("0 1\n1 1000000\n"), 0)
	if err != nil || el.N != 1000001 {
		t.Fatalf("edge list with a gap: %v, %v", el, err)
	}
}

// An OGB directory's declared node count is bounded the same way when no
// per-node file backs it.
func TestOGBNodeCountBoundedByItsEdges(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "raw/edge.csv", []byte("0,1\n"))
	writeFile(t, dir, "raw/num-node-list.csv", []byte("2147483646\n"))
	var err error
	n := allocated(func() { _, err = ReadOGB("tiny", dir) })
	if err == nil || !strings.Contains(err.Error(), "num-node-list.csv") || !strings.Contains(err.Error(), "2147483646 nodes") {
		t.Fatalf("err = %v", err)
	}
	if n > 16<<20 {
		t.Fatalf("refusing it allocated %d MiB", n>>20)
	}
}

// An archive whose arrays would not fit in the memory available is refused
// before they are inflated, with a message rather than the runtime's crash.
func TestNPZRefusedBeyondAvailableMemory(t *testing.T) {
	defer func(f func() (int64, bool)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, bool) { return 7 << 20, true }
	b := bombNPZ("attr_matrix", 4) // 4 MiB, and its conversion as much again: more than the 7 MiB "available"
	_, err := ParseNPZ("big.npz", b)
	if err == nil || !strings.Contains(err.Error(), "big.npz: its arrays hold 4.0 MiB, and reading them takes twice that, more than the 7.0 MiB of memory available") {
		t.Fatalf("err = %v", err)
	}
	availableMemory = func() (int64, bool) { return 9 << 20, true }
	if _, err := ParseNPZ("big.npz", b); err != nil {
		t.Fatalf("with 9 MiB available: %v", err)
	}
}

// An archive in no known layout is refused from its members' headers: its
// arrays, which nothing would read, are never inflated.
func TestNPZUnknownLayoutNotInflated(t *testing.T) {
	b := bombInto(npzBytes(true), "attr_matrix", 256)
	var err error
	n := allocated(func() { _, err = ParseNPZDataset("bomb", "bomb.npz", b) })
	if err == nil || !strings.Contains(err.Error(), "bomb.npz: unknown .npz layout (arrays: attr_matrix)") {
		t.Fatalf("err = %v", err)
	}
	if n > 16<<20 {
		t.Fatalf("refusing a %d-byte archive allocated %d MiB", len(b), n>>20)
	}
}

// An array is inflated into one allocation of its size, not a buffer
// grown as data arrives (which took up to four times the array).
func TestNPZInflatesOnce(t *testing.T) {
	const mib = 64
	b := bombInto(npzBytes(true), "x", mib)
	var z *NPZ
	var err error
	n := allocated(func() { z, err = ParseNPZ("big.npz", b) })
	if err != nil {
		t.Fatal(err)
	}
	if got := z.Arrays["x"].Len(); got != mib<<18 {
		t.Fatalf("x has %d values, want %d", got, mib<<18)
	}
	if n > (mib+4)<<20 {
		t.Fatalf("reading a %d MiB array allocated %d MiB", mib, n>>20)
	}
}

// A sparse matrix's dimensions that no array's length backs are bounded by
// its entries, as an edge list's node count is: a coo matrix declaring 2^25
// rows for one entry took 256 MiB of row offsets, and 2^25 feature columns
// a model as wide.
func TestSparseShapeBoundedByItsEntries(t *testing.T) {
	const big = 1 << 25
	one := []float64{1}
	benchmark := replaceMember(tinyBenchmarkNPZ(true), "attr_shape", npyBytes("<i8", false, []int{2}, le([]int64{4, big})))
	cases := []struct {
		name, want string
		b          []byte
		read       func(path string) error
	}{
		{"coo rows", "array shape declares 33554432 rows for 1 entries", scipyNPZ("coo", big, big, one, map[string][]int32{"row": {0}, "col": {1}}), readGraph},
		{"coo features", "array shape declares 33554432 rows for 1 entries", scipyNPZ("coo", big, 4, one, map[string][]int32{"row": {0}, "col": {1}}), readScipy},
		{"csr columns", "array shape declares 33554432 columns for 1 entries", scipyNPZ("csr", 2, big, one, map[string][]int32{"indptr": {0, 1, 1}, "indices": {0}}), readScipy},
		{"csc rows", "array shape declares 33554432 rows for 1 entries", scipyNPZ("csc", big, 2, one, map[string][]int32{"indptr": {0, 1, 1}, "indices": {0}}), readScipy},
		{"attribute columns", "array attr_shape declares 33554432 columns for 3 entries", benchmark, readGraph},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "m.npz", c.b)
			var err error
			n := allocated(func() { err = c.read(path) })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if n > 16<<20 {
				t.Fatalf("refusing it allocated %d MiB", n>>20)
			}
		})
	}
}

func readGraph(path string) error { _, err := ReadNPZDataset("", path); return err }
func readScipy(path string) error { _, err := ReadScipySparse(path); return err }

// replaceMember is the archive b with member name's .npy bytes replaced.
func replaceMember(b []byte, name string, npy []byte) []byte {
	zr, _ := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		if f.Name != name+".npy" {
			zw.Copy(f)
		}
	}
	w, _ := zw.Create(name + ".npy")
	w.Write(npy)
	zw.Close()
	return out.Bytes()
}

// The conversion of a save_npz matrix bounds its unbacked dimensions
// itself, not only the header check before inflating: an archive read
// without that check (ParseNPZ) and converted allocated its declared rows.
func TestScipyConversionBoundsItsShape(t *testing.T) {
	const big = 1 << 25
	one := []float64{1}
	for format, arrays := range map[string]map[string][]int32{
		"coo": {"row": {0}, "col": {1}},
		"csc": {"indptr": {0, 1, 1}, "indices": {0}},
	} {
		z, err := ParseNPZ("m.npz", scipyNPZ(format, big, 2, one, arrays))
		if err != nil {
			t.Fatal(err)
		}
		n := allocated(func() { _, err = npzDataset("m", z) })
		if err == nil || !strings.Contains(err.Error(), "array shape declares 33554432 rows for 1 entries") {
			t.Fatalf("%s: err = %v", format, err)
		}
		if n > 16<<20 {
			t.Fatalf("%s: refusing it allocated %d MiB", format, n>>20)
		}
	}
}

// An edge list is read only while the memory available can build a graph
// of the edges read so far: a gzipped megabyte of "0 1" lines holds 250
// million edges, and the runtime crashed when an allocation failed.
func TestEdgeListBoundedByAvailableMemory(t *testing.T) {
	lowMemory(t, 1<<20, 10<<20)
	text := strings.Repeat("0 1\n", 300_000)
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"node numbers", func() error { _, err := ParseEdgeList("big.txt", strings.NewReader(text), 2); return err }},
		{"any ids", func() error { _, _, _, _, _, err := parseEdgeListIDs("big.txt", strings.NewReader(text)); return err }},
	} {
		var err error
		n := allocated(func() { err = tc.read() })
		if err == nil || !strings.Contains(err.Error(), "big.txt: line ") || !strings.Contains(err.Error(), "more than the 10.0 MiB of memory available") {
			t.Fatalf("%s: err = %v", tc.name, err)
		}
		if n > 20<<20 { // in all, counting every growth of the arrays
			t.Fatalf("%s: refusing it allocated %d MiB", tc.name, n>>20)
		}
	}
	// The edges of a graph that fits are read.
	availableMemory = func() (int64, bool) { return 1 << 30, true }
	if el, err := ParseEdgeList("ok.txt", strings.NewReader(text), 2); err != nil || len(el.Src) != 300_000 {
		t.Fatalf("with 1 GiB available: %v", err)
	}
}

// Feature rows are read only while the memory available can hold them
// twice (the rows, and the matrix made of them): a gzipped node-feat.csv
// of 38 MB held 49 million dense rows of 100 values, 19.6 GB.
func TestFeatureRowsBoundedByAvailableMemory(t *testing.T) {
	lowMemory(t, 1<<20, 10<<20)
	for _, tc := range []struct {
		name, row string
		rows      int // past 8 MiB of storage
	}{
		{"dense", strings.Repeat("1,", 63) + "1\n", 60_000}, // 64 values a row
		{"sparse", "0,0\n", 1_200_000},                      // an offset a row
	} {
		text := strings.Repeat(tc.row, tc.rows)
		var err error
		n := allocated(func() { _, _, err = parseOGBFeatures("node-feat.csv", strings.NewReader(text), 0) })
		if err == nil || !strings.Contains(err.Error(), "node-feat.csv: line ") || !strings.Contains(err.Error(), "more than the 10.0 MiB of memory available") {
			t.Fatalf("%s: err = %v", tc.name, err)
		}
		if n > 40<<20 { // in all, counting every growth of the storage
			t.Fatalf("%s: refusing it allocated %d MiB", tc.name, n>>20)
		}
	}
}

// A LINQS dataset's feature rows and citations are bounded like other
// readers' by the memory available.
func TestLINQSBoundedByAvailableMemory(t *testing.T) {
	lowMemory(t, 1<<20, 10<<20)
	var content strings.Builder
	ones := strings.Repeat("\t1", 64)
	for i := range 25_000 {
		fmt.Fprintf(&content, "p%d%s\tA\n", i, ones)
	}
	_, _, err := parseLINQS("x", "x.content", strings.NewReader(content.String()), "x.cites", strings.NewReader("p0 p1\n"))
	if err == nil || !strings.Contains(err.Error(), "x.content: line ") || !strings.Contains(err.Error(), "more than the 10.0 MiB of memory available") {
		t.Fatalf("content: err = %v", err)
	}
	cites := strings.Repeat("p0 p1\n", 300_000)
	_, _, err = parseLINQS("x", "x.content", strings.NewReader("p0\t1\tA\np1\t0\tB\n"), "x.cites", strings.NewReader(cites))
	if err == nil || !strings.Contains(err.Error(), "x.cites: line ") || !strings.Contains(err.Error(), "more than the 10.0 MiB of memory available") {
		t.Fatalf("cites: err = %v", err)
	}
}

// lowMemory makes the text readers look at the memory available above
// look bytes, and find avail bytes, until t ends.
func lowMemory(t *testing.T, look, avail int64) {
	oldLook, oldAvail := lookAbove, availableMemory
	t.Cleanup(func() { lookAbove, availableMemory = oldLook, oldAvail })
	lookAbove = look
	availableMemory = func() (int64, bool) { return avail, true }
}

// An OGB directory's per-node and split files are read no further than
// their node count backs: labels stop at the count raw/num-node-list gives
// (a gzipped file of blank lines holds a billion), or without one while
// the memory available can hold a graph of that many nodes, and a split
// set stops at one line per node.
func TestOGBLinesBoundedByTheNodes(t *testing.T) {
	lines := strings.Repeat("0\n", 1_000_000)
	for _, tc := range []struct {
		name, file, count string
		low               bool
		want              string
	}{
		{"labels beyond the node count", "raw/node-label.csv", "3\n", false, "node-label.csv: line 4: more labels than the 3 nodes"},
		{"labels beyond the memory", "raw/node-label.csv", "", true, "nodes so far, and a graph of them takes about"},
		{"a split set beyond the node count", "split/s/train.csv", "", false, "train.csv: line 4: more than 3 lines: a split set lists each of the 3 nodes at most once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.low {
				lowMemory(t, 1<<20, 10<<20)
			}
			dir := t.TempDir()
			writeFile(t, dir, "raw/edge.csv", []byte("0,1\n1,2\n"))
			if tc.count != "" {
				writeFile(t, dir, "raw/num-node-list.csv", []byte(tc.count))
			}
			if tc.file != "raw/node-label.csv" {
				writeFile(t, dir, "raw/node-label.csv", []byte("0\n1\n0\n"))
				writeFile(t, dir, "split/s/valid.csv", []byte("1\n"))
				writeFile(t, dir, "split/s/test.csv", []byte("2\n"))
			}
			writeFile(t, dir, tc.file, []byte(lines))
			var err error
			n := allocated(func() { _, err = ReadOGB("x", dir) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if n > 24<<20 {
				t.Fatalf("refusing it allocated %d MiB", n>>20)
			}
		})
	}
}

// String ids count toward an edge list's memory: 100,000 edges between
// 200,000 distinct names take more than their 7 MB of edges.
func TestEdgeListCountsItsNames(t *testing.T) {
	lowMemory(t, 1<<20, 10<<20)
	var text strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&text, "a%d b%d\n", i, i)
	}
	_, _, _, _, _, err := parseEdgeListIDs("names.txt", strings.NewReader(text.String()))
	if err == nil || !strings.Contains(err.Error(), "names.txt: line ") || !strings.Contains(err.Error(), "more than the 10.0 MiB of memory available") {
		t.Fatalf("err = %v", err)
	}
}
