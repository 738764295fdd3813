package dataset

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/graft-gnn/graft/tensor"
)

// ReadOGB reads a node-property-prediction dataset in OGB's raw layout, as
// the ogb package downloads it (e.g. ogbn-arxiv):
//
//	raw/edge.csv.gz            "src,dst" per line (required)
//	raw/num-node-list.csv.gz   the node count (optional)
//	raw/node-feat.csv.gz       F comma-separated floats per node (optional)
//	raw/node-label.csv.gz      one class id per node; "nan" or empty = unlabelled (optional)
//	split/<scheme>/{train,valid,test}.csv.gz   node ids, one per line (optional)
//
// Files may also be uncompressed (no .gz). Edges are symmetrised like every
// other dataset's. Multi-label tasks (ogbn-proteins) are not supported.
func ReadOGB(name, dir string) (*Dataset, error) {
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	od := ogbDir(dir)
	edgePath, ok := od.find("raw/edge.csv")
	if !ok {
		return nil, fmt.Errorf("%s: not an OGB dataset directory (no raw/edge.csv.gz)", dir)
	}
	d := &Dataset{Name: name}
	n, err := od.readNodes(d)
	if err != nil {
		return nil, err
	}
	el, err := ReadEdgeList(edgePath, max(n, 0))
	if err != nil {
		return nil, err
	}
	if n < 0 {
		n = el.N
	} else if d.Dense == nil && d.Sparse == nil && d.Labels == nil { // only raw/num-node-list says so
		if err := justifiedNodes(int64(n), len(el.Src)); err != nil {
			p, _ := od.find("raw/num-node-list.csv")
			return nil, fmt.Errorf("%s: %v", p, err)
		}
	}
	if d.Graph, err = undirected(n, el.Src, el.Dst); err != nil {
		return nil, fmt.Errorf("%s: %w", edgePath, err)
	}
	if d.Labels != nil {
		d.ClassNames = numberedClasses(d.NumClasses)
	}
	if err := od.readSplit(d, n); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return d, nil
}

// ogbDir is the directory of an OGB dataset.
type ogbDir string

// find returns the path of file rel, gzipped or not, and whether it exists;
// a missing file's path is that of the gzipped one.
func (od ogbDir) find(rel string) (string, bool) {
	for _, p := range []string{rel + ".gz", rel} {
		full := filepath.Join(string(od), p)
		if _, err := os.Stat(full); err == nil {
			return full, true
		}
	}
	return filepath.Join(string(od), rel+".gz"), false
}

// readNodes reads the optional per-node files into d (features and labels)
// and returns the node count they agree on with raw/num-node-list, or -1
// when none of them is there.
func (od ogbDir) readNodes(d *Dataset) (int, error) {
	n := -1
	if p, ok := od.find("raw/num-node-list.csv"); ok {
		var err error
		if n, err = readOGBNodeCount(p); err != nil {
			return 0, err
		}
	}
	if p, ok := od.find("raw/node-feat.csv"); ok {
		x, s, err := readOGBFeatures(p, max(n, 0))
		if err != nil {
			return 0, err
		}
		rows := 0
		if x != nil {
			rows = x.Rows
		} else {
			rows = s.Rows
		}
		if n >= 0 && rows != n {
			return 0, fmt.Errorf("%s: %d feature rows for %d nodes (raw/num-node-list)", p, rows, n)
		}
		n = rows
		d.Dense, d.Sparse = x, s
	}
	if p, ok := od.find("raw/node-label.csv"); ok {
		labels, k, err := readOGBLabels(p, n)
		if err != nil {
			return 0, err
		}
		if n >= 0 && len(labels) != n {
			return 0, fmt.Errorf("%s: %d labels for %d nodes", p, len(labels), n)
		}
		n = len(labels)
		d.Labels, d.NumClasses = labels, k
	}
	return n, nil
}

// readOGBNodeCount reads raw/num-node-list: one graph's node count, or -1
// if the file has none.
func readOGBNodeCount(path string) (int, error) {
	n := -1
	err := readLines(path, func(lr *lineReader, line []byte) error {
		if isComment(line) {
			return nil
		}
		if n >= 0 {
			return lr.errorf("several graphs in one dataset are not supported (graph-level OGB datasets)")
		}
		v, err := strconv.Atoi(string(bytes.TrimSpace(line)))
		if err != nil || v < 0 || v > math.MaxInt32 {
			return lr.errorf("node count %q is not an integer in [0, 2^31)", line)
		}
		n = v
		return nil
	})
	return n, err
}

// readSplit reads the one split scheme under split/, if there is one, as
// d's public split of n nodes.
func (od ogbDir) readSplit(d *Dataset, n int) error {
	dir := string(od)
	schemes, _ := filepath.Glob(filepath.Join(dir, "split", "*"))
	if len(schemes) > 1 {
		return fmt.Errorf("%s: several split schemes %v; keep one", dir, schemes)
	}
	if len(schemes) == 0 {
		return nil
	}
	if d.Labels == nil {
		return fmt.Errorf("%s: split without raw/node-label.csv.gz", dir)
	}
	s := Split{Name: "public"}
	for _, part := range []struct {
		file string
		dst  *[]int32
	}{{"train.csv", &s.Train}, {"valid.csv", &s.Val}, {"test.csv", &s.Test}} {
		rel, _ := filepath.Rel(dir, filepath.Join(schemes[0], part.file))
		p, ok := od.find(rel)
		if !ok {
			return fmt.Errorf("%s: missing split file %s", dir, p)
		}
		var err error
		if *part.dst, err = readOGBIndex(p, n); err != nil {
			return err
		}
	}
	s.sort()
	d.Splits = []Split{s}
	return nil
}

// readOGBFeatures reads raw/node-feat; n > 0 is the node count, if known.
func readOGBFeatures(path string, n int) (*tensor.Matrix, *tensor.CSR, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return parseOGBFeatures(path, f, n)
}

// parseOGBFeatures reads rows of comma-separated floats, all of one width,
// as they stream in: each value is parsed in place (no per-value strings),
// and rows are kept sparse while at most half their values are nonzero, so
// a bag-of-words file never takes the memory of its dense form.
func parseOGBFeatures(name string, r io.Reader, n int) (*tensor.Matrix, *tensor.CSR, error) {
	rows := newFeatureRows(n)
	err := scanLines(name, r, func(lr *lineReader, line []byte) error {
		if len(line) == 0 {
			return lr.errorf("empty feature row")
		}
		if msg := rows.parse(line, ','); msg != "" {
			return lr.errorf("%s", msg)
		}
		if msg := rows.add(); msg != "" {
			return lr.errorf("%s", msg)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	x, s := rows.matrix(nil, 0)
	return x, s, nil
}

func readOGBLabels(path string, n int) ([]int32, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return parseOGBLabels(path, f, n)
}

// parseOGBLabels reads one class id per line; "nan" or blank is
// unlabelled. n is the node count when known (else -1): a file with more
// lines is refused when it has read n+1, not after reading them all.
// Without it, the lines are read while the memory available can hold
// a graph of as many nodes.
func parseOGBLabels(name string, r io.Reader, n int) ([]int32, int, error) {
	var labels []int32
	k := 0
	err := scanLines(name, r, func(lr *lineReader, line []byte) error {
		switch {
		case len(labels) == n:
			return lr.errorf("more labels than the %d nodes", n)
		case len(labels) == cap(labels):
			if err := roomForNodes(len(labels)); err != nil {
				return lr.errorf("%v", err)
			}
		}
		f := bytes.TrimSpace(line)
		if bytes.IndexByte(f, ',') >= 0 {
			return lr.errorf("several label columns; multi-label tasks are not supported")
		}
		if len(f) == 0 || string(f) == "nan" || string(f) == "NaN" {
			labels = append(labels, Unlabelled)
			return nil
		}
		v, err := strconv.ParseFloat(string(f), 64)
		if err != nil || v != math.Trunc(v) || v < 0 || v > math.MaxInt16 {
			return lr.errorf("label %q is not a class id in [0, %d]", f, math.MaxInt16)
		}
		labels = append(labels, int32(v))
		k = max(k, int(v)+1)
		return nil
	})
	return labels, k, err
}

func readOGBIndex(path string, n int) ([]int32, error) {
	var ids []int32
	err := readLines(path, func(lr *lineReader, line []byte) error {
		if isComment(line) {
			return nil
		}
		v, i, msg := parseID(line, skipBlanks(line, 0), int64(n)-1)
		if msg == "" && skipBlanks(line, i) != len(line) {
			msg = "want one node id per line"
		}
		if msg != "" {
			return lr.errorf("%s", msg)
		}
		if len(ids) == n {
			return lr.errorf("more than %d lines: a split set lists each of the %d nodes at most once", n, n)
		}
		ids = append(ids, int32(v))
		return nil
	})
	return ids, err
}
