package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/tensor"
)

// NodeFiles name files that give a dataset labels or features its source
// lacks (or replace those it has). See Dataset.ReadLabels and
// Dataset.ReadFeatures for the formats.
type NodeFiles struct {
	Labels, Features string
	// Map says whether a .npy features file, this Features or a dataset
	// directory's features.npy, is mapped into memory or read.
	Map Mapping
}

// LoadWith is Load followed by the labels and features of files.
func LoadWith(nameOrPath, dataDir string, files NodeFiles) (*Dataset, error) {
	d, err := load(nameOrPath, dataDir, files.Map)
	if err != nil {
		return nil, err
	}
	if err := d.AddFiles(files); err != nil {
		return nil, err
	}
	return d, nil
}

// AddFiles reads the labels and features files named by files, if any.
func (d *Dataset) AddFiles(files NodeFiles) error {
	if files.Features != "" {
		if err := d.readFeatures(files.Features, files.Map); err != nil {
			return err
		}
		d.useHugePages()
	}
	if files.Labels != "" {
		if err := d.ReadLabels(files.Labels); err != nil {
			return err
		}
	}
	return d.Validate()
}

// LabelFormats documents what ReadLabels accepts.
const LabelFormats = `.npy: one integer label per node, in node order (-1 or NaN: unlabelled)
text: "id,label" lines (comma, tab or blanks), optionally after a header line
      (first field "id" or "node", or a column name such as "user_id" that is no node);
      ids are the graph's node ids; integer labels (3 or 3.0) are class numbers, any other
      labels are class names (classes then numbered in sorted order), never
      a mix of the two; nodes
      not listed, and labels "", "nan" or -1, are unlabelled`

// ReadLabels sets d's labels from a file (see LabelFormats), replacing any
// the source had, and drops the source's fixed splits, which were drawn
// for its own labels.
func (d *Dataset) ReadLabels(path string) error {
	var labels []int32
	var k int
	var names []string
	var err error
	if strings.HasSuffix(path, ".npy") {
		labels, k, err = readNPYLabels(path, d.NumNodes())
		if errors.As(err, new(rowsError)) {
			err = fmt.Errorf("%w%s", err, d.rowsHint())
		}
	} else {
		labels, k, names, err = d.readLabelText(path)
	}
	if err != nil {
		return err
	}
	if names == nil {
		names = numberedClasses(k)
	}
	d.Labels, d.NumClasses, d.ClassNames, d.Splits = labels, k, names, nil
	return nil
}

func readNPYLabels(path string, n int) ([]int32, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	a, err := ParseNPY(path, b)
	if err != nil {
		return nil, 0, err
	}
	// (n, 1) is a column of them, as a pandas column's .to_numpy() of a
	// one-column frame gives it.
	if !(len(a.Shape) == 1 || len(a.Shape) == 2 && a.Shape[1] == 1) || a.Shape[0] != n {
		return nil, 0, rowsError{fmt.Errorf("%s: labels have shape %s, want (%d,): one per node", path, tuple(a.Shape), n)}
	}
	if a.dtype().kind == 'f' {
		// NaN is unlabelled, as "nan" in a text file: a float column
		// with missing values is how pandas holds integer labels.
		fs, err := a.Float64s()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		raw := make([]int64, len(fs))
		for i, f := range fs {
			if math.IsNaN(f) {
				f = -1
			}
			if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return nil, 0, fmt.Errorf("%s: element %d is %v, want an integer class or NaN", path, i, f)
			}
			raw[i] = int64(f)
		}
		return labelsFromInts(path, raw, true)
	}
	raw, err := a.Int64s()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return labelsFromInts(path, raw, true)
}

// readLabelText reads "id,label" lines.
func (d *Dataset) readLabelText(path string) ([]int32, int, []string, error) {
	n := d.NumNodes()
	node := make([]int32, 0)
	var text []string // labels as written, in file order
	seen := make([]int32, n)
	// A first line of column numbers ("0,1") that names a node is read as
	// its label until the node is labelled again or the other labels are
	// class names: it was a header then.
	var numbers *numberedColumns
	lines := 0
	err := readLines(path, func(lr *lineReader, line []byte) error {
		if isComment(line) {
			return nil
		}
		lines++
		f := splitFields(line)
		if len(f) != 2 {
			return lr.errorf("want 2 columns (node id, label), found %d in %q", len(f), clip(string(line), 80))
		}
		v, ok := d.NodeIndex(string(f[0]))
		if lines == 1 && (isHeader(f[0]) || d.namesColumns(f) || indexHeader(f) || columnNumbers(f) && !ok) {
			return nil
		}
		if lines == 1 && columnNumbers(f) {
			numbers = &numberedColumns{line: lr.line, text: string(line), fields: 2}
		}
		if !ok {
			return lr.errorf("%s", d.notANode(f[0]))
		}
		if numbers != nil && seen[v] == int32(numbers.line) {
			node, text, seen[v], numbers = node[1:], text[1:], 0, nil // the first line was a header
		}
		if seen[v] != 0 {
			return lr.errorf("node %q is labelled again (first on line %d)", f[0], seen[v])
		}
		seen[v] = int32(min(lr.line, 1<<31-1))
		node = append(node, v)
		text = append(text, string(f[1]))
		return nil
	})
	if numbers != nil && err == nil && len(text) > 1 && classNames(text[1:]) {
		seen[node[0]] = 0
		node, text, numbers = node[1:], text[1:], nil // the first line was a header
	}
	if err != nil && numbers != nil {
		err = fmt.Errorf("%w (%s, was read as node %s's label; if it is a header, name the columns: \"id,label\")", err, numbers, d.NodeID(int(node[0])))
	}
	if err != nil {
		return nil, 0, nil, err
	}
	if len(node) == 0 {
		return nil, 0, nil, fmt.Errorf("%s: no labels", path)
	}
	if err := mixedLabels(path, text, node, seen); err != nil {
		return nil, 0, nil, err
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = Unlabelled
	}
	if raw, ok := integerLabels(text); ok {
		k := 0
		for i, y := range raw {
			if y > 1<<15-1 {
				return nil, 0, nil, fmt.Errorf("%s: node %s has label %d, want a class number in [0, %d]", path, d.NodeID(int(node[i])), y, 1<<15-1)
			}
			labels[node[i]] = int32(y)
			k = max(k, int(y)+1)
		}
		return labels, k, nil, nil
	}
	var names []string
	for _, s := range text {
		if !missingLabel(s) {
			names = append(names, s)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > 1<<15 {
		return nil, 0, nil, fmt.Errorf("%s: %d distinct labels; at most %d classes are supported", path, len(names), 1<<15)
	}
	for i, s := range text {
		if !missingLabel(s) {
			c, _ := slices.BinarySearch(names, s)
			labels[node[i]] = int32(c)
		}
	}
	return labels, len(names), names, nil
}

// integerLabels converts labels that are all integers (or missing, as -1).
func integerLabels(text []string) ([]int64, bool) {
	raw := make([]int64, len(text))
	for i, s := range text {
		if missingLabel(s) {
			raw[i] = -1
			continue
		}
		v, ok := integerLabel(s)
		if !ok || v < -1 {
			return nil, false
		}
		raw[i] = v
	}
	return raw, true
}

// integerLabel parses a label that is an integer: "3", or "3.0" as pandas
// writes integer labels once a column has a missing one.
func integerLabel(s string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSuffix(s, ".0"), 10, 64)
	return v, err == nil
}

// mixedLabels refuses labels that are neither all class numbers nor all
// class names: a negative number other than -1 among numbers, or names
// among numbers ("x", "1.5", "NA"), which would otherwise turn every label
// into a name and renumber the classes in the names' byte order ("10"
// before "2"). line[node[i]] is the line of text[i].
func mixedLabels(path string, text []string, node, line []int32) error {
	number, name := -1, -1 // the first label of each kind
	for i, s := range text {
		if missingLabel(s) {
			continue
		}
		v, ok := integerLabel(s)
		switch {
		case ok && v < -1:
			return fmt.Errorf("%s: line %d: label %q: a class number is 0 or more (-1, nan or an empty label: unlabelled)", path, line[node[i]], clip(s, 40))
		case ok && number < 0:
			number = i
		case !ok && name < 0:
			name = i
		}
	}
	if number < 0 || name < 0 {
		return nil
	}
	return fmt.Errorf("%s: line %d: label %q is not a class number, but line %d's %q is; labels are either all class numbers (integers from 0) or all class names (an unlabelled node: -1, nan or an empty label)",
		path, line[node[name]], clip(text[name], 40), line[node[number]], clip(text[number], 40))
}

func missingLabel(s string) bool {
	return s == "" || s == "-1" || s == "-1.0" || strings.EqualFold(s, "nan")
}

// namesColumns reports whether the first line of a file keyed by node id,
// split into fields, is a header of another name than isHeader knows
// ("user_id,label", "paper,f1,f2"): its first field is not a node of the
// graph but reads as a column name (it holds "id", "node", "name" or
// "vertex"), and no other field is a number.
func (d *Dataset) namesColumns(f [][]byte) bool {
	if len(f) < 2 {
		return false
	}
	if _, ok := d.NodeIndex(string(f[0])); ok {
		return false
	}
	name := strings.ToLower(string(f[0]))
	if !strings.Contains(name, "id") && !strings.Contains(name, "node") && !strings.Contains(name, "name") && !strings.Contains(name, "vertex") {
		return false
	}
	for _, x := range f[1:] {
		if _, ok := parseFloat32(x); ok {
			return false
		}
	}
	return true
}

// indexHeader reports whether a first line, split into fields, is the
// header pandas writes for a frame with its index (DataFrame.to_csv()):
// an empty first field, the index's, then the columns' names. No node has
// an empty id.
func indexHeader(f [][]byte) bool {
	return len(f) > 1 && len(f[0]) == 0
}

// columnNames reports whether a first line, split into fields, names
// columns and nothing else: no field is a number, and the first is no
// node ("f1,f2,f3", as pandas writes a frame without its index).
func (d *Dataset) columnNames(f [][]byte) bool {
	if len(f) == 0 {
		return false
	}
	if _, ok := d.NodeIndex(string(f[0])); ok {
		return false
	}
	for _, x := range f {
		if _, ok := parseFloat32(x); ok || len(x) == 0 {
			return false
		}
	}
	return true
}

// isHeader reports whether a first column names its column rather than a
// node: "id", "node", "node_id" or "nodeid" in any case.
func isHeader(f []byte) bool {
	switch strings.ToLower(string(f)) {
	case "id", "node", "node_id", "nodeid":
		return true
	}
	return false
}

// splitFields splits a line on commas if it has any, else on runs of tabs
// and spaces, trimming blanks around each field.
//
// A field in double quotes, as CSV writers quote a name holding a comma or
// a blank, is read without them (a doubled quote within stands for one), and
// a line that ends in a tab ends in an empty field: pandas writes a missing
// label so in a tab-separated file ("7\t").
func splitFields(line []byte) [][]byte {
	var f [][]byte
	switch {
	case bytes.IndexByte(line, '"') >= 0:
		f = splitQuoted(line)
	case bytes.IndexByte(line, ',') >= 0:
		f = bytes.Split(line, []byte{','})
		for i := range f {
			f[i] = trimBlanks(f[i])
		}
	default:
		f = bytes.Fields(line)
		if len(f) > 0 && line[len(line)-1] == '\t' {
			f = append(f, nil)
		}
	}
	return f
}

// splitQuoted is splitFields for a line with double quotes: fields are
// separated by commas if the line has any outside quotes, else by blanks.
func splitQuoted(line []byte) [][]byte {
	comma, quoted := false, false
	for _, c := range line {
		if c == '"' {
			quoted = !quoted
		} else if c == ',' && !quoted {
			comma = true
		}
	}
	var f [][]byte
	for i := 0; ; {
		for !comma && i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if !comma && i == len(line) {
			return f
		}
		var field []byte
		j := i
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		if j < len(line) && line[j] == '"' {
			field, j, _ = unquote(line, j)
		}
		end := j
		for end < len(line) && (comma && line[end] != ',' || !comma && line[end] != ' ' && line[end] != '\t') {
			end++
		}
		if field == nil {
			field = trimBlanks(line[i:end])
		} else { // text after the closing quote belongs to the field, as CSV readers take it
			field = append(field, bytes.TrimRight(line[j:end], " \t")...)
		}
		f = append(f, field)
		if end == len(line) {
			return f
		}
		i = end + 1
	}
}

// unquote reads the field in double quotes that starts at line[j] (a
// doubled quote within stands for one), returning its text (never nil),
// the index after its closing quote, and whether there was one.
func unquote(line []byte, j int) (field []byte, next int, closed bool) {
	field = []byte{}
	for j++; j < len(line); j++ {
		if line[j] == '"' {
			if j+1 < len(line) && line[j+1] == '"' {
				j++
			} else {
				return field, j + 1, true
			}
		}
		field = append(field, line[j])
	}
	return field, j, false
}

// FeatureFormats documents what ReadFeatures accepts.
const FeatureFormats = `.npy: a 2-D float array, one row per node in node order
.npz: a scipy.sparse matrix (save_npz: csr, csc or coo), one row per node
text: one row of numbers per node (comma, tab or blank separated), in node order;
      or "id,f1,f2,..." rows keyed by node id, in any order, when the first line
      is a header whose first field is "id" (or "node") or the first field is not
      a number; every node needs a row. A first line of column numbers (0,1,2,...)
      is a header when the rows after it are one per node`

// ReadFeatures sets d's features from a file (see FeatureFormats),
// replacing any the source had. Text rows are stored sparse while at most
// half their values are nonzero. A .npy file larger than half the memory
// available is mapped rather than read (MapAuto).
func (d *Dataset) ReadFeatures(path string) error { return d.readFeatures(path, MapAuto) }

func (d *Dataset) readFeatures(path string, mode Mapping) error {
	n := d.NumNodes()
	switch {
	case strings.HasSuffix(path, ".npy"):
		err := d.readNPYFeatureFile(path, mode)
		if errors.As(err, new(rowsError)) {
			err = fmt.Errorf("%w%s", err, d.rowsHint())
		}
		return err
	case mode == MapAlways:
		return fmt.Errorf("%s: only a .npy feature file can be mapped (--features-mmap)", path)
	case strings.HasSuffix(path, ".npz"):
		m, err := ReadScipySparse(path)
		if err != nil {
			return err
		}
		if m.Rows != n {
			return fmt.Errorf("%s: a %d×%d matrix for %d nodes; want one row per node", path, m.Rows, m.Cols, n)
		}
		if m.Cols == 0 {
			return fmt.Errorf("%s: a %d×0 matrix: no feature columns; want at least one", path, m.Rows)
		}
		d.setFeatures(nil, m)
		return nil
	}
	return d.readFeatureText(path)
}

// readNPYFeatureFile maps or reads a .npy feature matrix, as mode says.
func (d *Dataset) readNPYFeatureFile(path string, mode Mapping) error {
	n := d.NumNodes()
	mapIt, avail, err := shouldMap(path, n, mode)
	if err != nil {
		return err
	}
	if mapIt {
		m, err := MapFeatures(path, n)
		if err != nil {
			return err
		}
		m.Auto, m.Available = mode == MapAuto, avail
		d.setFeatures(nil, nil)
		d.Mapped, d.Dense, d.DenseBF16 = m, m.Float32(), m.BFloat16()
		return nil
	}
	x, cols, err := readNPYFeatures(path, n)
	if err != nil {
		return err
	}
	d.setFeatures(tensor.FromSlice(n, cols, x), nil)
	return nil
}

// setFeatures replaces d's features by dense or sparse ones in memory.
func (d *Dataset) setFeatures(dense *tensor.Matrix, sparse *tensor.CSR) {
	d.Dense, d.Sparse, d.DenseBF16, d.Mapped = dense, sparse, nil, nil
}

func (d *Dataset) readFeatureText(path string) error {
	n := d.NumNodes()
	rows := newFeatureRows(n)
	keyed, first, decided := false, true, false
	var order []int32
	var seen []bool
	var numbers *numberedColumns // a first line of column numbers
	err := readLines(path, func(lr *lineReader, line []byte) error {
		if isComment(line) {
			return nil
		}
		if !decided {
			key, _ := firstField(line)
			if first {
				first = false
				f := splitFields(line)
				switch {
				case isHeader(key) || d.namesColumns(f) || indexHeader(f):
					keyed, decided = true, true
					return nil
				case d.columnNames(f):
					return nil // the first row says whether an id leads the rows
				case columnNumbers(f):
					// A header or a row: the rows after it say which.
					numbers = &numberedColumns{line: lr.line, text: string(line), fields: len(f)}
					return nil
				}
			}
			decided = true
			if _, ok := parseFloat32(key); !ok {
				keyed = true
			}
			if w := len(splitFields(line)); numbers != nil && !keyed && w != numbers.fields {
				if w == numbers.fields+1 {
					return lr.errorf("%d columns, one more than %s, numbers: if each row starts with its node's id, head that column \"id\" (pandas: to_csv(index_label=\"id\"))", w, numbers)
				}
				return lr.errorf("%d columns, but the first row has %d (%s)", w, numbers.fields, numbers)
			}
		}
		if keyed {
			key, rest := firstField(line)
			v, ok := d.NodeIndex(string(key))
			if !ok {
				return lr.errorf("%s", d.notANode(key))
			}
			if seen == nil {
				seen = make([]bool, n)
			}
			if seen[v] {
				return lr.errorf("node %q has a second feature row", key)
			}
			seen[v] = true
			order = append(order, v)
			line = rest
		} else if rows.rows == n {
			if numbers != nil {
				return lr.errorf("more feature rows than the graph's %d nodes, even without %s, which may be a header numbering the columns%s", n, numbers, d.rowsHint())
			}
			return lr.errorf("more feature rows than the graph's %d nodes%s", n, d.rowsHint())
		}
		if msg := rows.parse(line, separator(line)); msg != "" {
			return lr.errorf("%s", msg)
		}
		if msg := rows.add(); msg != "" {
			return lr.errorf("%s", msg)
		}
		return nil
	})
	if err == nil && numbers != nil {
		err = d.numbersRow(path, numbers, keyed, rows, &order, &seen)
	}
	if err != nil {
		return err
	}
	if rows.rows < n {
		if !keyed || seen == nil {
			return fmt.Errorf("%s: %d feature rows for %d nodes%s", path, rows.rows, n, d.rowsHint())
		}
		for v, ok := range seen {
			if !ok {
				hint := ""
				if d.NodeIDs == nil && d.Graph.Degree(v) == 0 {
					hint = fmt.Sprintf("; it is in no edge: an edge list's integer ids are node numbers 0..%d, so ids from 1 or with gaps make such nodes", n-1)
				}
				return fmt.Errorf("%s: node %s has no feature row (%d of %d nodes have one)%s", path, d.NodeID(v), rows.rows, n, hint)
			}
		}
	}
	d.setFeatures(rows.matrix(order, n))
	return nil
}

// firstField returns the text before the first comma, tab or space (after
// leading blanks), and the rest of the line after its separator.
// A field in double quotes (an id as R's write.csv writes it) is returned
// without them.
func firstField(line []byte) (field, rest []byte) {
	i := skipBlanks(line, 0)
	if i < len(line) && line[i] == '"' {
		if field, next, closed := unquote(line, i); closed {
			end := tokenEnd(line, next)
			field = append(field, line[next:end]...)
			j := skipBlanks(line, end)
			if j < len(line) && line[j] == ',' {
				j++
			}
			return field, line[j:]
		}
	}
	end := tokenEnd(line, i)
	j := skipBlanks(line, end)
	if j < len(line) && line[j] == ',' {
		j++
	}
	return line[i:end], line[j:]
}

// separator is ',' for a line with a comma, else 0 (blanks).
func separator(line []byte) byte {
	if bytes.IndexByte(line, ',') >= 0 {
		return ','
	}
	return 0
}

// readSplitText reads a split as "id,set" lines (comma, tab or blanks;
// optionally after an "id,set" header), set being train, val (or valid)
// or test. Nodes not listed are in no set.
func (d *Dataset) readSplitText(path string) (Split, error) {
	var s Split
	seen := make([]int32, d.NumNodes())
	err := readLines(path, func(lr *lineReader, line []byte) error {
		if isComment(line) {
			return nil
		}
		f := splitFields(line)
		if len(f) != 2 {
			return lr.errorf("want 2 columns (node id, set), found %d in %q", len(f), clip(string(line), 80))
		}
		// A first line of column numbers ("0,1") is a header: no set is a number.
		if (isHeader(f[0]) || d.namesColumns(f) || indexHeader(f) || columnNumbers(f)) && len(s.Train)+len(s.Val)+len(s.Test) == 0 {
			return nil
		}
		v, ok := d.NodeIndex(string(f[0]))
		if !ok {
			return lr.errorf("%s", d.notANode(f[0]))
		}
		var set *[]int32
		switch strings.ToLower(string(f[1])) {
		case "train":
			set = &s.Train
		case "val", "valid", "validation":
			set = &s.Val
		case "test":
			set = &s.Test
		default:
			return lr.errorf("set %q: want train, val or test", clip(string(f[1]), 40))
		}
		switch {
		case seen[v] != 0:
			return lr.errorf("node %q is listed again (first on line %d)", f[0], seen[v])
		case d.Labels[v] < 0:
			return lr.errorf("node %q is in the %s set but has no label", f[0], strings.ToLower(string(f[1])))
		}
		seen[v] = int32(min(lr.line, 1<<31-1))
		*set = append(*set, v)
		return nil
	})
	if err != nil {
		return Split{}, err
	}
	s.sort()
	return s, nil
}

// rowsError is a file of rows in node order that has another number of
// rows than the graph has nodes.
type rowsError struct{ err error }

func (e rowsError) Error() string { return e.err.Error() }
func (e rowsError) Unwrap() error { return e.err }

// rowsHint says, after a row count that is not the node count, what the
// nodes are: an edge list's integer ids are node numbers, so ids from 1,
// or ids with gaps, make nodes that no edge mentions, which rows in node
// order must cover too.
func (d *Dataset) rowsHint() string {
	if d.NodeIDs != nil {
		return "; rows in node order follow the node ids sorted (graft data info says how many): key each row by its node id in a text file instead"
	}
	isolated, first := 0, -1
	for v := range d.Graph.N {
		if d.Graph.Degree(v) == 0 {
			isolated++
			if first < 0 {
				first = v
			}
		}
	}
	if isolated == 0 {
		return ""
	}
	return fmt.Sprintf(" (the nodes are ids 0..%d, %d of them, such as %d, in no edge); number the nodes from 0 without gaps, or key each row by its node id in a text file",
		d.Graph.N-1, isolated, first)
}

// notANode says that id, read from a labels, features or split file, is
// no node of d's graph; a graph read from an edge list has the nodes its
// lines name, and a line holding an id alone adds a node in no edge.
func (d *Dataset) notANode(id []byte) string {
	msg := fmt.Sprintf("node id %q is not a node of the graph (%d nodes)", clip(string(id), 40), d.NumNodes())
	if d.EdgeList != "" {
		msg += fmt.Sprintf("; the nodes are the ids of %s, where a line holding an id alone adds a node in no edge", d.EdgeList)
	}
	return msg
}
