package main

import (
	"archive/zip"
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/graft-gnn/graft/dataset"
)

// must stops the program at the first error.
func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "ogblayout:", err)
		os.Exit(1)
	}
}

func gzFile(path string, fill func(w *bufio.Writer)) {
	f, err := os.Create(path)
	must(err)
	gw := gzip.NewWriter(f)
	bw := bufio.NewWriterSize(gw, 1<<20)
	fill(bw)
	must(bw.Flush())
	must(gw.Close())
	must(f.Close())
}

func npyHeader(w io.Writer, descr, shape string) {
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	w.Write([]byte("\x93NUMPY\x01\x00")) // the archive's writer reports errors at Close
	binary.Write(w, binary.LittleEndian, uint16(len(hdr)+1))
	w.Write([]byte(hdr + "\n"))
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ogblayout DATASET OUTDIR")
		os.Exit(2)
	}
	d, err := dataset.Load(os.Args[1], "")
	must(err)
	out := os.Args[2]
	must(os.MkdirAll(filepath.Join(out, "ogb", "raw"), 0o755))
	x := d.DenseFeatures()
	n, f := x.Rows, x.Cols
	var src, dst []int64
	for u := 0; u < d.Graph.N; u++ {
		for _, v := range d.Graph.Adj(u) {
			if int(v) > u {
				src, dst = append(src, int64(u)), append(dst, int64(v))
			}
		}
	}
	raw := filepath.Join(out, "ogb", "raw")
	gzFile(filepath.Join(raw, "edge.csv.gz"), func(w *bufio.Writer) {
		for i := range src {
			fmt.Fprintf(w, "%d,%d\n", src[i], dst[i])
		}
	})
	gzFile(filepath.Join(raw, "num-node-list.csv.gz"), func(w *bufio.Writer) { fmt.Fprintf(w, "%d\n", n) })
	gzFile(filepath.Join(raw, "node-label.csv.gz"), func(w *bufio.Writer) {
		for _, y := range d.Labels {
			fmt.Fprintf(w, "%d\n", y)
		}
	})
	gzFile(filepath.Join(raw, "node-feat.csv.gz"), func(w *bufio.Writer) {
		var buf []byte
		for i := 0; i < n; i++ {
			buf = buf[:0]
			for j, v := range x.Row(i) {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendFloat(buf, float64(v), 'f', -1, 32)
				if v == float32(int32(v)) {
					buf = append(buf, '.', '0')
				}
			}
			buf = append(buf, '\n')
			w.Write(buf)
		}
	})
	zf, err := os.Create(filepath.Join(out, "same.npz"))
	must(err)
	zw := zip.NewWriter(zf)
	member := func(name, descr, shape string, data any) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Deflate})
		must(err)
		npyHeader(w, descr, shape)
		must(binary.Write(w, binary.LittleEndian, data))
	}
	member("node_features", "<f4", fmt.Sprintf("(%d, %d)", n, f), x.Data)
	labels := make([]int64, n)
	for i, y := range d.Labels {
		labels[i] = int64(y)
	}
	member("node_labels", "<i8", fmt.Sprintf("(%d,)", n), labels)
	edges := make([]int64, 0, 2*len(src))
	for i := range src {
		edges = append(edges, src[i], dst[i])
	}
	member("edges", "<i8", fmt.Sprintf("(%d, 2)", len(src)), edges)
	must(zw.Close())
	must(zf.Close())
}
