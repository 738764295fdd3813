package dataset

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// npyBytes encodes a version 1.0 .npy file around raw little-endian data.
func npyBytes(descr string, fortran bool, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	f := "False"
	if fortran {
		f = "True"
	}
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, f, tuple)
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	b.Write(data)
	return b.Bytes()
}

// le encodes values little-endian (int8/uint8/bool as single bytes).
func le(values any) []byte {
	var b bytes.Buffer
	if bs, ok := values.([]bool); ok {
		for _, v := range bs {
			if v {
				b.WriteByte(1)
			} else {
				b.WriteByte(0)
			}
		}
		return b.Bytes()
	}
	if err := binary.Write(&b, binary.LittleEndian, values); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// unicode encodes strings as numpy <U width.
func unicode(width int, ss ...string) []byte {
	var b bytes.Buffer
	for _, s := range ss {
		rs := []rune(s)
		for i := 0; i < width; i++ {
			var r rune
			if i < len(rs) {
				r = rs[i]
			}
			binary.Write(&b, binary.LittleEndian, uint32(r))
		}
	}
	return b.Bytes()
}

type member struct {
	name string
	npy  []byte
}

// npzBytes zips members into an .npz archive.
func npzBytes(deflate bool, members ...member) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	method := zip.Store
	if deflate {
		method = zip.Deflate
	}
	for _, m := range members {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name + ".npy", Method: method})
		if err != nil {
			panic(err)
		}
		w.Write(m.npy)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyBenchmarkNPZ is a 4-node gnn-benchmark archive: a directed path
// 0→1→2 plus 3→3 (a self loop), 3 sparse features, 2 classes.
func tinyBenchmarkNPZ(deflate bool) []byte {
	return npzBytes(deflate,
		member{"adj_data", npyBytes("<f4", false, []int{4}, le([]float32{1, 1, 1, 1}))},
		member{"adj_indices", npyBytes("<i4", false, []int{4}, le([]int32{1, 2, 0, 3}))},
		member{"adj_indptr", npyBytes("<i4", false, []int{5}, le([]int32{0, 1, 2, 3, 4}))},
		member{"adj_shape", npyBytes("<i8", false, []int{2}, le([]int64{4, 4}))},
		member{"attr_data", npyBytes("<f4", false, []int{3}, le([]float32{1, 2, 0.5}))},
		member{"attr_indices", npyBytes("<i4", false, []int{3}, le([]int32{0, 2, 1}))},
		member{"attr_indptr", npyBytes("<i4", false, []int{5}, le([]int32{0, 1, 2, 2, 3}))},
		member{"attr_shape", npyBytes("<i8", false, []int{2}, le([]int64{4, 3}))},
		member{"labels", npyBytes("|i1", false, []int{4}, le([]int8{0, 1, 1, 0}))},
		member{"class_names", npyBytes("<U3", false, []int{2}, unicode(3, "a", "bcd"))},
	)
}

var nan32 = float32(math.NaN())
