package dataset

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// EdgeList is a list of directed edges (Src[i], Dst[i]) on nodes 0..N-1.
type EdgeList struct {
	N        int
	Src, Dst []int32
}

// ReadEdgeList reads a plain edge list: one edge per line as two
// non-negative integer ids separated by tabs, spaces or a comma; blank lines
// and lines starting with '#' or '%' are skipped; the file may be gzipped.
// With n > 0 every id must be below n; with n <= 0 the node count is the
// largest id + 1. A line with other than two columns is an error: weights
// are not supported.
func ReadEdgeList(path string, n int) (*EdgeList, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseEdgeList(path, f, n)
}

// ParseEdgeList is ReadEdgeList on a stream; name labels errors.
//
// It is the hot path for large graphs, so it parses ids by hand from the
// bufio buffer instead of splitting strings: cnr-2000 (3.2M arcs) parses in
// well under a second.
func ParseEdgeList(name string, r io.Reader, n int) (*EdgeList, error) {
	lr, err := newLineReader(name, r)
	if err != nil {
		return nil, err
	}
	defer lr.close()
	limit := int64(math.MaxInt32 - 1)
	if n > 0 {
		limit = int64(n) - 1
	}
	el := &EdgeList{}
	maxID, maxLine := int32(-1), 0
	for {
		line, ok := lr.next()
		if !ok {
			break
		}
		s, d, perr := parseEdgeLine(line, limit)
		if perr != "" {
			if perr == "comment" {
				continue
			}
			return nil, lr.errorf("%s", perr)
		}
		if len(el.Src) == cap(el.Src) {
			if err := roomForEdges(len(el.Src), 0); err != nil {
				return nil, lr.errorf("%v", err)
			}
		}
		el.Src = append(el.Src, s)
		el.Dst = append(el.Dst, d)
		if max(s, d) > maxID {
			maxID, maxLine = max(s, d), lr.line
		}
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	el.N = int(maxID) + 1
	if n > 0 {
		el.N = n
	} else if err := justifiedNodes(int64(el.N), len(el.Src)); err != nil {
		return nil, fmt.Errorf("%s: line %d: node id %d: %v; relabel the node ids to 0..N-1", name, maxLine, maxID, err)
	}
	return el, nil
}

// bytesPerEdge is about what an edge costs at the peak of reading an edge
// list and building its graph: the ids read, the edges both ways, their
// sort and the CSR arrays (measured: 1.1 GiB for 16.7 million edges).
const bytesPerEdge = 72

// roomForEdges refuses to read beyond edges edges when the memory
// available cannot build a graph of them. A gzipped edge list inflates up
// to a thousandfold, so a megabyte may hold 250 million edges, and when
// an allocation fails the runtime crashes with a goroutine dump rather
// than a message. Readers call it when an edge array is about to grow,
// so the memory state is read only a few dozen times. names is the number
// of string ids read so far (each kept as a string, in a map and in the
// dataset's ids; about bytesPerName).
func roomForEdges(edges, names int) error {
	need := int64(edges)*bytesPerEdge + int64(names)*bytesPerName
	if need < lookAbove {
		return nil
	}
	if avail, ok := availableMemory(); ok && need > avail {
		return fmt.Errorf("%d edges so far, and a graph of them takes about %s, more than the %s of memory available", edges, byteSize(need), byteSize(avail))
	}
	return nil
}

// bytesPerName is about what a string id costs (measured: 400 MiB for 2
// million edges between 2 million ids, 72 bytes an edge and the rest for
// the ids).
const bytesPerName = 128

// bytesPerNode is about what a node costs at the peak of building a
// graph: its label, row offsets and degree, and their copies.
const bytesPerNode = 40

// roomForNodes is roomForEdges for a node count that a file's lines back
// (one label a line, say).
func roomForNodes(nodes int) error {
	need := int64(nodes) * bytesPerNode
	if need < lookAbove {
		return nil
	}
	if avail, ok := availableMemory(); ok && need > avail {
		return fmt.Errorf("%d nodes so far, and a graph of them takes about %s, more than the %s of memory available", nodes, byteSize(need), byteSize(avail))
	}
	return nil
}

// lookAbove is the memory below which the text readers do not look at the
// memory available (a variable for tests).
var lookAbove int64 = 64 << 20

// isolatedNodes is how many nodes beyond two per edge a graph read from an
// edge list may have: nodes no edge mentions, which cost memory that
// nothing in the file justifies.
const isolatedNodes = 1 << 20

// justifiedNodes refuses a node count that the graph's edges cannot
// justify: more than two nodes per edge plus isolatedNodes. A graph of n
// nodes costs memory in proportion to n, so one large id in a small file
// would otherwise take gigabytes.
func justifiedNodes(n int64, edges int) error {
	if limit := 2*int64(edges) + isolatedNodes; n > limit {
		return fmt.Errorf("a graph of %d nodes, more than its %d edges justify (at most %d)", n, edges, limit)
	}
	return nil
}

// parseEdgeLine parses "u<sep>v"; it returns a non-empty message on failure,
// or "comment" for a line to skip. Messages are strings, not errors, so the
// common path allocates nothing.
func parseEdgeLine(line []byte, limit int64) (src, dst int32, msg string) {
	i := skipBlanks(line, 0)
	if i == len(line) || line[i] == '#' || line[i] == '%' {
		return 0, 0, "comment"
	}
	u, i, msg := parseID(line, i, limit)
	if msg != "" {
		return 0, 0, msg
	}
	j := skipBlanks(line, i)
	if j < len(line) && line[j] == ',' {
		j = skipBlanks(line, j+1)
	} else if j == i || j == len(line) {
		return 0, 0, fmt.Sprintf("want 2 columns (source, target), found 1 in %q", clip(string(line), 80))
	}
	v, j, msg := parseID(line, j, limit)
	if msg != "" {
		return 0, 0, msg
	}
	if k := skipBlanks(line, j); k != len(line) {
		return 0, 0, fmt.Sprintf("want 2 columns (source, target), found more in %q", clip(string(line), 80))
	}
	return int32(u), int32(v), ""
}

func skipBlanks(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// parseID parses a decimal id at b[i:], bounded by limit.
func parseID(b []byte, i int, limit int64) (int64, int, string) {
	start := i
	var v int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		if v > limit {
			return 0, i, idRangeMessage(b, start, limit)
		}
		i++
	}
	if i == start || (i < len(b) && b[i] != ' ' && b[i] != '\t' && b[i] != ',') {
		end := i
		for end < len(b) && b[end] != ' ' && b[end] != '\t' && b[end] != ',' {
			end++
		}
		return 0, i, fmt.Sprintf("%q is not a non-negative integer node id", b[start:end])
	}
	return v, i, ""
}

func idRangeMessage(b []byte, start int, limit int64) string {
	end := start
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	return fmt.Sprintf("node id %s out of range [0, %d]", b[start:end], limit)
}

// loadEdgeListDataset reads an edge list as a structure-only dataset. Its
// ids may be any tokens: integer ids that the edges justify are node
// numbers as they are; others are renumbered in sorted order and kept in
// NodeIDs (see idTable.nodes). With n > 0 the ids must instead be node
// numbers below n.
func loadEdgeListDataset(name, path string, n int) (*Dataset, error) {
	var src, dst []int32
	var ids []string
	var header string
	var err error
	if n > 0 {
		var el *EdgeList
		if el, err = ReadEdgeList(path, n); err == nil {
			src, dst = el.Src, el.Dst
		}
	} else {
		n, src, dst, ids, header, err = readEdgeListIDs(path)
	}
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no edges", path)
	}
	g, err := undirected(n, src, dst)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), ".gz")
	}
	d := &Dataset{Name: name, Graph: g, NodeIDs: ids, EdgeListHeader: header, EdgeList: path}
	return d, d.Validate()
}
