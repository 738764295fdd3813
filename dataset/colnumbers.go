package dataset

import (
	"fmt"
	"slices"
	"strconv"
)

// columnNumbers reports whether a first line, split into fields, numbers
// the columns as pandas writes the header of a frame whose columns are
// integers (pd.DataFrame(array).to_csv(index=False)): 0,1,...,k-1, or
// 1,...,k. Such a line could be a row of numbers as well; the files'
// readers decide by what follows it.
func columnNumbers(f [][]byte) bool {
	if len(f) == 0 {
		return false
	}
	start := -1
	for i, x := range f {
		v, err := strconv.Atoi(string(x))
		switch {
		case err != nil:
			return false
		case i == 0 && (v == 0 || v == 1):
			start = v
		case v != start+i:
			return false
		}
	}
	return true
}

// numberedColumns is a first line of column numbers (see columnNumbers)
// whose reading, header or row, the rest of its file decides.
type numberedColumns struct {
	line   int    // its line number
	text   string // as written
	fields int
}

func (c *numberedColumns) String() string {
	return fmt.Sprintf("line %d, %q", c.line, clip(c.text, 60))
}

// markHeader says how to write a header that is never read as a row.
const markHeader = `name the columns with words (f0,f1,...), or start the line with "#"`

// prepend inserts the row buffer, parsed, as the first row; its width was
// checked against the other rows'.
func (f *featureRows) prepend() string {
	if f.rows == 0 {
		return f.add()
	}
	if len(f.row) != f.cols {
		return fmt.Sprintf("%d columns, but the other rows have %d", len(f.row), f.cols)
	}
	f.rows++
	if f.dense != nil {
		f.dense = slices.Insert(f.dense, 0, f.row...)
		return ""
	}
	var idx []int32
	var val []float32
	for c, v := range f.row {
		if v != 0 {
			idx = append(idx, int32(c))
			val = append(val, v)
		}
	}
	f.idx = slices.Insert(f.idx, 0, idx...)
	f.val = slices.Insert(f.val, 0, val...)
	for i := range f.ptr {
		f.ptr[i] += int64(len(idx))
	}
	f.ptr = slices.Insert(f.ptr, 0, 0)
	return ""
}

// numbersRow decides what a features file's first line of column numbers
// is, once the rest has been read into rows: a header when the rows cover
// the nodes without it, the first row (or, keyed, the row of the node its
// first field names) when they cover them with it, and otherwise an error
// that says both counts.
func (d *Dataset) numbersRow(path string, c *numberedColumns, keyed bool, rows *featureRows, order *[]int32, seen *[]bool) error {
	n := d.NumNodes()
	key, rest := firstField([]byte(c.text))
	if keyed {
		v, ok := d.NodeIndex(string(key))
		if !ok || *seen != nil && (*seen)[v] {
			return nil // a header: no node, or one with a row of its own
		}
		if msg := rows.parse(rest, separator(rest)); msg != "" {
			return fmt.Errorf("%s: %s: %s", path, c, msg)
		}
		if msg := rows.add(); msg != "" {
			return fmt.Errorf("%s: %s, read as node %s's row: %s; if it is a header, %s", path, c, key, msg, markHeader)
		}
		if *seen == nil {
			*seen = make([]bool, n)
		}
		(*seen)[v] = true
		*order = append(*order, v)
		return nil
	}
	switch rows.rows {
	case n:
		return nil // a header
	case n - 1:
		line := []byte(c.text)
		if msg := rows.parse(line, separator(line)); msg != "" {
			return fmt.Errorf("%s: %s: %s", path, c, msg)
		}
		if msg := rows.prepend(); msg != "" {
			return fmt.Errorf("%s: %s: %s", path, c, msg)
		}
		return nil
	}
	return fmt.Errorf("%s: %d feature rows for %d nodes%s; that counts %s, which may be a header numbering the columns (without it, %d rows; to mark a header, %s)",
		path, rows.rows+1, n, d.rowsHint(), c, rows.rows, markHeader)
}

// classNames reports whether some label is a class name, not a number.
func classNames(text []string) bool {
	for _, s := range text {
		if _, ok := integerLabel(s); !ok && !missingLabel(s) {
			return true
		}
	}
	return false
}
