package dataset

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/graft-gnn/graft/tensor"
)

// linqsNodes maps paper ids to node numbers.
type linqsNodes struct {
	index map[string]int32
	ids   []string
}

func (ns *linqsNodes) add(id string) int32 {
	if v, ok := ns.index[id]; ok {
		return v
	}
	v := int32(len(ns.ids))
	ns.index[id] = v
	ns.ids = append(ns.ids, id)
	return v
}

// parseLINQS reads a citation graph in the LINQS format (Sen et al. 2008)
// from its two streams, and also returns the node map, so a split keyed by
// paper id can be applied. content holds one tab-separated line per paper,
// "<paper id> <f_1> … <f_F> <class label>", and cites one line per
// citation, "<cited id> <citing id>"; either may be gzipped. Nodes are
// numbered in .content order. Ids that appear only in .cites (CiteSeer has
// 15) are kept as featureless, unlabelled nodes numbered after the content
// rows in order of first appearance, as Planetoid keeps them; that is what
// makes CiteSeer's node count 3327 and lets the Planetoid split map onto it.
// Class ids follow the sorted class names, so they do not depend on row order.
func parseLINQS(name, contentName string, content io.Reader, citesName string, cites io.Reader) (*Dataset, *linqsNodes, error) {
	nodes := &linqsNodes{index: map[string]int32{}}
	papers := &linqsPapers{width: -1, offsets: []int64{0}}
	err := scanLines(contentName, content, func(lr *lineReader, line []byte) error {
		return papers.add(lr, line, nodes)
	})
	if err != nil {
		return nil, nil, err
	}
	if len(nodes.ids) == 0 {
		return nil, nil, fmt.Errorf("%s: no papers", contentName)
	}
	src, dst, err := parseLINQSCites(citesName, cites, nodes)
	if err != nil {
		return nil, nil, err
	}
	n := len(nodes.ids)
	g, err := undirected(n, src, dst)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", citesName, err)
	}
	classNames, labels := papers.labels(n)
	d := &Dataset{
		Name:       name,
		Graph:      g,
		Sparse:     papers.features(n),
		Labels:     labels,
		NumClasses: len(classNames),
		ClassNames: classNames,
		NodeIDs:    nodes.ids, // paper ids, in the order of .content (then .cites-only ones)
	}
	if err := d.Validate(); err != nil {
		return nil, nil, err
	}
	return d, nodes, nil
}

// linqsPapers is what a .content file holds: a sparse feature row and a
// class name per paper, in file order.
type linqsPapers struct {
	width      int // features per paper; -1 before the first paper
	offsets    []int64
	cols       []int32
	vals       []float32
	labelNames []string
}

// add reads one .content line, "<paper id> <f_1> … <f_F> <class label>",
// numbering the paper in nodes.
func (ps *linqsPapers) add(lr *lineReader, line []byte, nodes *linqsNodes) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	n := bytes.Count(line, []byte{'\t'}) + 1
	if n < 2 {
		return lr.errorf("want tab-separated \"<paper id> <features…> <label>\", found 1 column")
	}
	if ps.width < 0 {
		ps.width = n - 2
	} else if n-2 != ps.width {
		return lr.errorf("%d columns, but line 1 has %d (paper id, %d features, label)", n, ps.width+2, ps.width)
	}
	it := fieldIter{rest: line, sep: '\t'}
	id, _ := it.next()
	if len(id) == 0 {
		return lr.errorf("empty paper id")
	}
	if _, dup := nodes.index[string(id)]; dup {
		return lr.errorf("paper id %q appears twice", id)
	}
	nodes.add(string(id))
	if err := ps.addFeatures(lr, &it); err != nil {
		return err
	}
	label, _ := it.next()
	if len(bytes.TrimSpace(label)) == 0 {
		return lr.errorf("paper %q has an empty class label", id)
	}
	ps.labelNames = append(ps.labelNames, string(bytes.TrimSpace(label)))
	return nil
}

// addFeatures reads a paper's width features from it as a sparse row.
func (ps *linqsPapers) addFeatures(lr *lineReader, it *fieldIter) error {
	if len(ps.cols)+ps.width > cap(ps.cols) || len(ps.offsets) == cap(ps.offsets) {
		// About to grow: a gzipped file inflates up to a thousandfold.
		if msg := roomForRows(len(ps.offsets), 8*int64(len(ps.cols))+8*int64(len(ps.offsets))); msg != "" {
			return lr.errorf("%s", msg)
		}
	}
	for c := 0; c < ps.width; c++ {
		f, _ := it.next()
		var x float32
		switch {
		case len(f) == 1 && f[0] == '0':
			continue
		case len(f) == 1 && f[0] == '1':
			x = 1
		default:
			v, err := strconv.ParseFloat(string(bytes.TrimSpace(f)), 32)
			if err != nil {
				return lr.errorf("feature %d: %q is not a number", c+1, f)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return lr.errorf("feature %d is %v; features must be finite", c+1, v)
			}
			if v == 0 {
				continue
			}
			x = float32(v)
		}
		ps.cols = append(ps.cols, int32(c))
		ps.vals = append(ps.vals, x)
	}
	ps.offsets = append(ps.offsets, int64(len(ps.cols)))
	return nil
}

// parseLINQSCites reads the citations, one "<cited id> <citing id>" per
// line, as edges from the citing paper to the cited one, numbering papers
// that have no .content row after those that have.
func parseLINQSCites(citesName string, cites io.Reader, nodes *linqsNodes) (src, dst []int32, err error) {
	err = scanLines(citesName, cites, func(lr *lineReader, line []byte) error {
		f := bytes.Fields(line)
		switch {
		case len(f) == 0:
			return nil
		case len(f) != 2:
			return lr.errorf("want \"<cited id> <citing id>\", found %d columns", len(f))
		}
		if len(dst) == cap(dst) {
			if err := roomForEdges(len(dst), len(nodes.ids)); err != nil {
				return lr.errorf("%v", err)
			}
		}
		// The citing paper aggregates from the cited one; symmetrising
		// makes the direction moot for the dataset's graph anyway.
		dst = append(dst, nodes.add(string(f[0])))
		src = append(src, nodes.add(string(f[1])))
		return nil
	})
	return src, dst, err
}

// labels numbers the class names in sorted order and returns them with the
// labels of n nodes, the papers first; the nodes after them are unlabelled.
func (ps *linqsPapers) labels(n int) (classNames []string, labels []int32) {
	classNames = slices.Clone(ps.labelNames)
	slices.Sort(classNames)
	classNames = slices.Compact(classNames)
	classOf := make(map[string]int32, len(classNames))
	for i, c := range classNames {
		classOf[c] = int32(i)
	}
	labels = make([]int32, n)
	for v := range labels {
		labels[v] = Unlabelled
		if v < len(ps.labelNames) {
			labels[v] = classOf[ps.labelNames[v]]
		}
	}
	return classNames, labels
}

// features returns the feature rows of n nodes, the papers first; the
// nodes after them get empty rows.
func (ps *linqsPapers) features(n int) *tensor.CSR {
	for len(ps.offsets) < n+1 {
		ps.offsets = append(ps.offsets, ps.offsets[len(ps.offsets)-1])
	}
	x := &tensor.CSR{Rows: n, Cols: ps.width, Offsets: ps.offsets, Indices: ps.cols, Values: ps.vals}
	if allOnes(ps.vals) {
		x.Values = nil // binary bag of words: CSR's "all ones" form
	}
	return x
}

func allOnes(x []float32) bool {
	for _, v := range x {
		if v != 1 {
			return false
		}
	}
	return true
}

// applyPlanetoidSplit reads a planetoid/<name>.public_split.tsv file
// ("planetoid_index paper_id label split", tab-separated, '#' comments) and
// attaches its split to d as "public". It checks every label against the
// LINQS one, and if the file covers every node it sets d.MaskOrder to the
// Planetoid order, which Geom-GCN split files index.
func applyPlanetoidSplit(d *Dataset, nodes *linqsNodes, name string, r io.Reader) error {
	n := d.Graph.N
	order := make([]int32, n)
	for i := range order {
		order[i] = -1
	}
	placed := make([]bool, n)
	covered := 0
	s := Split{Name: "public"}
	err := scanLines(name, r, func(lr *lineReader, line []byte) error {
		if isComment(line) {
			return nil
		}
		f := bytes.Split(line, []byte{'\t'})
		if len(f) != 4 {
			return lr.errorf("want 4 tab-separated columns (planetoid_index, paper_id, label, split), found %d", len(f))
		}
		idx, err := strconv.Atoi(string(f[0]))
		if err != nil || idx < 0 || idx >= n {
			return lr.errorf("planetoid index %q is not in [0, %d)", f[0], n)
		}
		v, ok := nodes.index[string(f[1])]
		if !ok {
			return lr.errorf("paper id %q is not in the dataset", f[1])
		}
		if order[idx] >= 0 {
			return lr.errorf("planetoid index %d appears twice", idx)
		}
		if placed[v] {
			return lr.errorf("paper id %q appears twice", f[1])
		}
		placed[v] = true
		order[idx] = v
		covered++
		want := "-"
		if d.Labels[v] >= 0 {
			want = d.ClassNames[d.Labels[v]]
		}
		if string(f[2]) != want {
			return lr.errorf("paper %q has label %q here but %q in the dataset", f[1], f[2], want)
		}
		switch string(f[3]) {
		case "train":
			s.Train = append(s.Train, v)
		case "val":
			s.Val = append(s.Val, v)
		case "test":
			s.Test = append(s.Test, v)
		case "-":
		default:
			return lr.errorf("split %q is not train, val, test or -", f[3])
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.sort()
	if err := s.check(d); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	d.Splits = append(d.Splits, s)
	if covered == n {
		d.MaskOrder = order
	}
	return nil
}
