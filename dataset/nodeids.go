package dataset

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// NodeID is the name of node i in the source: NodeIDs[i] when the reader
// renumbered the source's ids, else i itself in decimal.
func (d *Dataset) NodeID(i int) string {
	if d.NodeIDs != nil {
		return d.NodeIDs[i]
	}
	return strconv.Itoa(i)
}

// NodeIndex finds the node a source id names (the inverse of NodeID). An
// integer id matches however it is written ("007" is node 7 when the ids
// were integers).
func (d *Dataset) NodeIndex(id string) (int32, bool) {
	if d.NodeIDs == nil {
		v, err := strconv.ParseInt(id, 10, 64)
		if err != nil || v < 0 || v >= int64(d.NumNodes()) {
			return 0, false
		}
		return int32(v), true
	}
	if d.idIndex == nil {
		d.idIndex = make(map[string]int32, len(d.NodeIDs))
		for i, s := range d.NodeIDs {
			d.idIndex[s] = int32(i)
		}
	}
	if v, ok := d.idIndex[id]; ok {
		return v, true
	}
	if v, err := strconv.ParseInt(id, 10, 64); err == nil {
		v, ok := d.idIndex[strconv.FormatInt(v, 10)]
		return v, ok
	}
	return 0, false
}

// idTable collects the node ids of an edge list as they are read. While
// every id is an integer it keeps the integers themselves;
// the first other id switches it to interning strings, each endpoint then
// holding its string's index in names.
type idTable struct {
	numeric bool
	ends    []int64 // source and target of every edge, interleaved
	names   []string
	index   map[string]int64
}

func newIDTable() *idTable { return &idTable{numeric: true} }

// add records one endpoint given as its text.
func (t *idTable) add(tok []byte) {
	if t.numeric {
		if v, ok := parseInt63(tok); ok {
			t.ends = append(t.ends, v)
			return
		}
		t.toStrings()
	}
	t.ends = append(t.ends, t.intern(string(tok)))
}

// parseInt63 parses a decimal integer in (-2^63, 2^63).
func parseInt63(b []byte) (int64, bool) {
	neg := len(b) > 1 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 && (len(b) > 19 || string(b) > "9223372036854775807") {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (t *idTable) intern(s string) int64 {
	if i, ok := t.index[s]; ok {
		return i
	}
	i := int64(len(t.names))
	t.names = append(t.names, s)
	t.index[s] = i
	return i
}

// toStrings turns the integer ids read so far into interned strings.
func (t *idTable) toStrings() {
	t.numeric = false
	t.index = map[string]int64{}
	for i, v := range t.ends {
		t.ends[i] = t.intern(strconv.FormatInt(v, 10))
	}
}

// nodes numbers the ids. Integer ids whose largest value the edges
// justify (see justifiedNodes) are taken as they are: node i is id i,
// ids no edge mentions are isolated nodes, and ids is nil. Any other ids
// are renumbered 0..N-1 in sorted order, numerically for integers and by
// bytes for strings, and ids lists the source id of each node. It returns
// the node count and the edges in node numbers.
func (t *idTable) nodes() (n int, src, dst []int32, ids []string) {
	m := len(t.ends) / 2
	src, dst = make([]int32, m), make([]int32, m)
	if t.numeric {
		minID, maxID := int64(0), int64(-1)
		for _, v := range t.ends {
			minID, maxID = min(minID, v), max(maxID, v)
		}
		// maxID+1 nodes, compared without overflow (ids reach 2^63-1)
		// and in int32, the type of node numbers; negative ids are
		// renumbered, in numeric order.
		if minID >= 0 && maxID < math.MaxInt32 && justifiedNodes(maxID+1, m) == nil {
			for i := range m {
				src[i], dst[i] = int32(t.ends[2*i]), int32(t.ends[2*i+1])
			}
			return int(maxID + 1), src, dst, nil
		}
		distinct := slices.Clone(t.ends)
		slices.Sort(distinct)
		distinct = slices.Compact(distinct)
		ids = make([]string, len(distinct))
		for i, v := range distinct {
			ids[i] = strconv.FormatInt(v, 10)
		}
		rank := func(v int64) int32 { i, _ := slices.BinarySearch(distinct, v); return int32(i) }
		for i := range m {
			src[i], dst[i] = rank(t.ends[2*i]), rank(t.ends[2*i+1])
		}
		return len(distinct), src, dst, ids
	}
	order := make([]int32, len(t.names))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		switch x, y := t.names[a], t.names[b]; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	node := make([]int32, len(t.names))
	ids = make([]string, len(t.names))
	for rank, i := range order {
		node[i] = int32(rank)
		ids[rank] = t.names[i]
	}
	for i := range m {
		src[i], dst[i] = node[t.ends[2*i]], node[t.ends[2*i+1]]
	}
	return len(ids), src, dst, ids
}

// maxIDBytes bounds one node id of an edge list: longer tokens are
// corrupt input, not names.
const maxIDBytes = 1024

// readEdgeListIDs reads an edge list whose ids may be any tokens: one edge
// per line as two ids separated by tabs, spaces or one comma, or one id
// alone, a node in no edge unless another line names it; blank lines
// and '#' or '%' comments are skipped, and so is a first line that names
// the columns (see isHeader), which is returned (clipped to 80 bytes) as
// header; the file may be gzipped.
func readEdgeListIDs(path string) (n int, src, dst []int32, ids []string, header string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, nil, nil, "", err
	}
	defer f.Close()
	return parseEdgeListIDs(path, f)
}

func parseEdgeListIDs(name string, r io.Reader) (n int, src, dst []int32, ids []string, header string, err error) {
	t := newIDTable()
	var head [2]string // the first line, when neither of its ids is an integer
	var headLine string
	lines := 0
	err = scanLines(name, r, func(lr *lineReader, line []byte) error {
		if isComment(line) {
			return nil
		}
		a, b, msg := splitEdge(line)
		if msg != "" {
			return lr.errorf("%s", msg)
		}
		if b == nil {
			// An id alone is a node, in no edge unless another line
			// has it: a self loop, which the graph drops.
			b = a
		} else if lines++; lines == 1 {
			if _, ok := parseInt63(a); !ok {
				if _, ok := parseInt63(b); !ok {
					head, headLine = [2]string{string(a), string(b)}, clip(string(line), 80)
					return nil
				}
			}
		}
		if len(t.ends) >= cap(t.ends)-1 {
			if err := roomForEdges(len(t.ends)/2, len(t.names)); err != nil {
				return lr.errorf("%v", err)
			}
		}
		t.add(a)
		t.add(b)
		if len(t.ends) > 2*(1<<31-2) {
			return lr.errorf("more than 2^31 edges")
		}
		if len(t.names) >= 1<<31-1 {
			return lr.errorf("more than 2^31 distinct node ids")
		}
		return nil
	})
	if err != nil {
		return 0, nil, nil, nil, "", err
	}
	if head[0] != "" {
		if t.isHeader(head) {
			header = headLine
		} else {
			t.add([]byte(head[0]))
			t.add([]byte(head[1]))
		}
	}
	n, src, dst, ids = t.nodes()
	return n, src, dst, ids, header, nil
}

// isHeader reports whether the first line of an edge list, two ids that
// are not integers, names its columns rather than an edge: when every
// other id is an integer (a header would otherwise make every id a
// string and renumber the nodes, so that rows in node order no longer
// lined up), or when both are column names such as source and target
// that no other line uses as an id.
func (t *idTable) isHeader(head [2]string) bool {
	if len(t.ends) == 0 {
		return false
	}
	if t.numeric {
		return true
	}
	for _, s := range head {
		if _, used := t.index[s]; used || !columnNames[strings.ToLower(s)] {
			return false
		}
	}
	return true
}

// columnNames are the names an edge list's header gives its two columns.
var columnNames = map[string]bool{
	"source": true, "target": true, "src": true, "dst": true, "from": true, "to": true,
	"u": true, "v": true, "head": true, "tail": true, "node1": true, "node2": true,
	"id1": true, "id2": true, "source_id": true, "target_id": true, "src_id": true, "dst_id": true,
	"from_id": true, "to_id": true, "node_1": true, "node_2": true, "id_1": true, "id_2": true,
}

// splitEdge cuts "u<sep>v" into its two ids, or returns why it cannot;
// a line holding one id alone, without a separator, returns it with b nil.
// Ids in double quotes, as R's write.csv writes them, are read without
// the quotes, as the labels and features files' are.
func splitEdge(line []byte) (a, b []byte, msg string) {
	if bytes.IndexByte(line, '"') >= 0 {
		f := splitQuoted(line)
		switch {
		case len(f) == 1 && len(f[0]) > 0 && len(f[0]) <= maxIDBytes && bytes.IndexByte(line, ',') < 0:
			return f[0], nil, ""
		case len(f) < 2 || len(f[0]) == 0:
			return nil, nil, fmt.Sprintf("want 2 columns (source, target), found 1 in %q", clip(string(line), 80))
		case len(f[1]) == 0:
			return nil, nil, fmt.Sprintf("empty target id in %q", clip(string(line), 80))
		case len(f) > 2:
			return nil, nil, fmt.Sprintf("want 2 columns (source, target), found more in %q; weights are not supported", clip(string(line), 80))
		case len(f[0]) > maxIDBytes || len(f[1]) > maxIDBytes:
			return nil, nil, fmt.Sprintf("a node id longer than %d bytes", maxIDBytes)
		}
		return f[0], f[1], ""
	}
	i := skipBlanks(line, 0)
	end := tokenEnd(line, i)
	a = line[i:end]
	j := skipBlanks(line, end)
	if j == len(line) && len(a) > 0 && len(a) <= maxIDBytes {
		return a, nil, ""
	}
	if j < len(line) && line[j] == ',' {
		j = skipBlanks(line, j+1)
	}
	if len(a) == 0 || j == len(line) {
		return nil, nil, fmt.Sprintf("want 2 columns (source, target), found 1 in %q", clip(string(line), 80))
	}
	end = tokenEnd(line, j)
	b = line[j:end]
	if len(b) == 0 {
		return nil, nil, fmt.Sprintf("empty target id in %q", clip(string(line), 80))
	}
	if k := skipBlanks(line, end); k != len(line) {
		return nil, nil, fmt.Sprintf("want 2 columns (source, target), found more in %q; weights are not supported", clip(string(line), 80))
	}
	if len(a) > maxIDBytes || len(b) > maxIDBytes {
		return nil, nil, fmt.Sprintf("a node id longer than %d bytes", maxIDBytes)
	}
	return a, b, ""
}

// tokenEnd returns the end of the id starting at i: the next blank or comma.
func tokenEnd(b []byte, i int) int {
	for i < len(b) && b[i] != ' ' && b[i] != '\t' && b[i] != ',' {
		i++
	}
	return i
}
