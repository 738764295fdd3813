package partition

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/graft-gnn/graft/graph"
)

// ReadAssignment reads an assignment in METIS's format: one part id per
// line, line v for node v, as gpmetis writes it. Blank lines are ignored.
// n is the expected node count; k, when positive, is the part count every id
// must lie below, and when zero is taken as the largest id plus one, which
// may then be at most n.
// ReadAssignment does not reject empty parts (gpmetis can produce them);
// Evaluate reports how many there are.
func ReadAssignment(r io.Reader, n, k int) (parts []int32, numParts int, err error) {
	if n < 0 {
		return nil, 0, fmt.Errorf("partition: negative node count %d", n)
	}
	if k < 0 {
		return nil, 0, fmt.Errorf("partition: negative part count %d", k)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 4096)
	parts = make([]int32, 0, n)
	line := 0
	for sc.Scan() {
		line++
		field := bytes.TrimSpace(sc.Bytes())
		if len(field) == 0 {
			continue
		}
		if len(parts) == n {
			return nil, 0, fmt.Errorf("partition: assignment has more than %d entries (line %d); it belongs to a larger graph", n, line)
		}
		p, err := strconv.ParseInt(string(field), 10, 32)
		if err != nil {
			return nil, 0, fmt.Errorf("partition: assignment line %d: %q is not a part id", line, field)
		}
		if p < 0 {
			return nil, 0, fmt.Errorf("partition: assignment line %d: part %d is negative", line, p)
		}
		if k > 0 && p >= int64(k) {
			return nil, 0, fmt.Errorf("partition: assignment line %d: part %d out of range [0,%d)", line, p, k)
		}
		// Without a given part count the largest id sets it, and callers
		// allocate per part: a two-line file naming part 2^31-1 would take
		// gigabytes. More parts than nodes is no partition anyone means.
		if k == 0 && p >= int64(max(n, 1)) {
			return nil, 0, fmt.Errorf("partition: assignment line %d: part %d would make more parts than the graph's %d nodes", line, p, n)
		}
		parts = append(parts, int32(p))
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, 0, fmt.Errorf("partition: assignment line %d is too long to be a part id", line+1)
		}
		return nil, 0, fmt.Errorf("partition: reading assignment: %w", err)
	}
	if len(parts) != n {
		return nil, 0, fmt.Errorf("partition: assignment has %d entries for %d nodes", len(parts), n)
	}
	if k == 0 {
		k = NumParts(parts)
	}
	return parts, k, nil
}

// WriteAssignment writes parts in METIS's format, one part id per line.
func WriteAssignment(w io.Writer, parts []int32) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for _, p := range parts {
		buf = strconv.AppendInt(buf[:0], int64(p), 10)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteMETISGraph writes g in the graph format gpmetis reads: a header
// "n m [fmt ncon]" and one line of 1-based neighbours per node. Self loops
// are left out, as METIS forbids them. weights, if non-empty, are vertex
// weight constraints (each of length g.N), written with fmt 010. g must be
// undirected.
func WriteMETISGraph(w io.Writer, g *graph.Graph, weights ...[]int32) error {
	if err := checkCSR(g); err != nil {
		return err
	}
	for c, wt := range weights {
		if len(wt) != g.N {
			return fmt.Errorf("partition: weight constraint %d has %d entries for %d nodes", c, len(wt), g.N)
		}
	}
	var selfLoops int64
	for v := 0; v < g.N; v++ {
		for _, u := range g.Adj(v) {
			if int(u) == v {
				selfLoops++
			}
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	header := fmt.Sprintf("%d %d", g.N, (g.NumEdges()-selfLoops)/2)
	if len(weights) > 0 {
		header += fmt.Sprintf(" 010 %d", len(weights))
	}
	if _, err := bw.WriteString(header + "\n"); err != nil {
		return err
	}
	var buf []byte
	for v := 0; v < g.N; v++ {
		buf = buf[:0]
		for _, wt := range weights {
			buf = strconv.AppendInt(buf, int64(wt[v]), 10)
			buf = append(buf, ' ')
		}
		for _, u := range g.Adj(v) {
			if int(u) == v {
				continue
			}
			buf = strconv.AppendInt(buf, int64(u)+1, 10)
			buf = append(buf, ' ')
		}
		if len(buf) > 0 {
			buf = buf[:len(buf)-1]
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}
