package dataset

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Ids up to 2^63-1 are renumbered: the largest one plus one overflowed
// int64 and made a negative node count.
func TestEdgeListIDsNearInt64Max(t *testing.T) {
	for _, text := range []string{
		"0 9223372036854775807\n",
		"0 4294967297\n4294967297 9223372036854775807\n",
		"0 2147483647\n",
		"-1 2\n2 3\n-5 -1\n", // negative ids: renumbered in numeric order (they were in byte order)
	} {
		n, src, dst, ids, _, err := parseEdgeListIDs("big.txt", strings.NewReader(text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		var nums []int
		for _, f := range strings.Fields(text) {
			v, _ := strconv.Atoi(f)
			nums = append(nums, v)
		}
		slices.Sort(nums)
		var want []string
		for _, v := range slices.Compact(nums) {
			want = append(want, strconv.Itoa(v))
		}
		if n != len(want) || !slices.Equal(ids, want) || len(src) != len(dst) {
			t.Errorf("%q: %d nodes, ids %v; want %v", text, n, ids, want)
		}
	}
}

// A first line naming the columns is a header, not an edge between two
// nodes called "source" and "target" (which made every id a string and
// renumbered the nodes out of the order of node-ordered rows).
func TestEdgeListIDsHeader(t *testing.T) {
	tests := []struct {
		text   string
		nodes  int
		ids    []string // nil: the ids are node numbers
		header string   // the first line when it is a header
	}{
		{"source,target\n0,1\n1,2\n", 3, nil, "source,target"},
		{"# comment\nsrc dst\n0 2\n", 3, nil, "src dst"},
		{"from\tto\n5\t1\n", 6, nil, "from\tto"},
		{"my_src my_dst\n0 1\n", 2, nil, "my_src my_dst"},                                   // any names when every other id is an integer
		{"source,target\nalice,bob\n", 2, []string{"alice", "bob"}, "source,target"},        // column names, string ids
		{"alice,bob\nbob,carol\n", 3, []string{"alice", "bob", "carol"}, ""},                // an edge, not names of columns
		{"source,target\ntarget,x\n", 3, []string{"source", "target", "x"}, ""},             // "target" is a node here
		{"u v\n", 2, []string{"u", "v"}, ""},                                                // the only line is an edge
		{"a b\nc 1\n", 4, []string{"1", "a", "b", "c"}, ""},                                 // not every other id is an integer
		{"0 1\nsource target\n", 4, []string{"0", "1", "source", "target"}, ""},             // only the first line can be a header
		{`"from","to"` + "\n" + `"0","1"` + "\n" + `"1","2"` + "\n", 3, nil, `"from","to"`}, // quoted, as R writes them
		{`"a b","c"` + "\n" + `"c", "a b"` + "\n", 2, []string{"a b", "c"}, ""},             // a quoted id may hold a blank
		{strings.Repeat("x", 100) + " y\n0 1\n", 2, nil, strings.Repeat("x", 80) + "…"},     // a long header is clipped
	}
	for _, tc := range tests {
		n, _, _, ids, header, err := parseEdgeListIDs("g.csv", strings.NewReader(tc.text))
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if n != tc.nodes || !slices.Equal(ids, tc.ids) || header != tc.header {
			t.Errorf("%q: %d nodes, ids %q, header %q; want %d, %q, %q", tc.text, n, ids, header, tc.nodes, tc.ids, tc.header)
		}
	}
}

func TestSplitFields(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"7,red", []string{"7", "red"}},
		{" 7 , red ", []string{"7", "red"}},
		{"7\tred", []string{"7", "red"}},
		{"7  red", []string{"7", "red"}},
		{"7,", []string{"7", ""}},
		{"7\t", []string{"7", ""}}, // pandas' missing label, tab-separated
		{`7,"class a"`, []string{"7", "class a"}},
		{`"u 7","a, b"`, []string{"u 7", "a, b"}},
		{`"u7" "class a"`, []string{"u7", "class a"}},
		{`7,"say ""hi"""`, []string{"7", `say "hi"`}},
		{`7,""`, []string{"7", ""}},
		{`"7",red,`, []string{"7", "red", ""}},
		{`"u"7,red`, []string{"u7", "red"}}, // text after the quotes is the field's, as CSV readers take it
		{`"u 7" ,red`, []string{"u 7", "red"}},
	}
	for _, tc := range tests {
		var got []string
		for _, f := range splitFields([]byte(tc.line)) {
			got = append(got, string(f))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q; want %q", tc.line, got, tc.want)
		}
	}
}

// A feature row's id in double quotes reads as a field of the other
// files does: a doubled quote is one, and text after the closing quote
// belongs to the id (the id ended at the second quote, its rest read as
// the row's first value).
func TestFirstFieldQuoted(t *testing.T) {
	for _, tc := range []struct{ line, field, rest string }{
		{`"a""b",1,2`, `a"b`, "1,2"},
		{`"u"7,1`, "u7", "1"},
		{`"u 7" 1 2`, "u 7", "1 2"},
		{`"open,1`, `"open`, "1"},
	} {
		field, rest := firstField([]byte(tc.line))
		if string(field) != tc.field || string(rest) != tc.rest {
			t.Errorf("%q: %q, %q; want %q, %q", tc.line, field, rest, tc.field, tc.rest)
		}
	}
}

// An edge list numbered from 1 has a node 0 in no edge, so rows in node
// order are one short: the error says why, for text and .npy alike.
func TestRowCountHint(t *testing.T) {
	dir := t.TempDir()
	g := writeFile(t, dir, "g.tsv", []byte("1 2\n2 3\n"))
	want := "(the nodes are ids 0..3, 1 of them, such as 0, in no edge)"
	for _, tc := range []struct {
		labels, features string
		content          []byte
		err              string
	}{
		{"", "x.csv", []byte("1\n2\n3\n"), "x.csv: 3 feature rows for 4 nodes " + want},
		{"", "k.csv", []byte("id,f\n1,1\n2,2\n3,3\n"), "k.csv: node 0 has no feature row (3 of 4 nodes have one); it is in no edge: an edge list's integer ids are node numbers 0..3"},
		{"", "x.npy", npyBytes("<f4", false, []int{3, 1}, make([]byte, 12)), "x.npy: features have shape (3, 1), want (4, F): one row per node " + want},
		{"y.npy", "", npyBytes("<i8", false, []int{3}, make([]byte, 24)), "y.npy: labels have shape (3,), want (4,): one per node " + want},
	} {
		name := tc.labels + tc.features
		p := writeFile(t, dir, name, tc.content)
		files := NodeFiles{}
		if tc.labels != "" {
			files.Labels = p
		} else {
			files.Features = p
		}
		_, err := LoadWith(g, "", files)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v; want an error containing %q", name, err, tc.err)
		}
	}
}

// Feature rows keyed by ids in double quotes, under a quoted header, as R's
// write.csv writes them: the quotes were part of the id.
func TestFeaturesQuotedIDs(t *testing.T) {
	d, dir := stringGraph(t)
	text := "\"id\",\"a\",\"b\"\n\"dave\",1,2\n\"alice\",3,4\n\"bob\",5,6\n\"carol\",7,8\n"
	if err := d.ReadFeatures(writeFile(t, dir, "x.csv", []byte(text))); err != nil {
		t.Fatal(err)
	}
	x := d.DenseFeatures()
	if i, _ := d.NodeIndex("carol"); x.Cols != 2 || x.Row(int(i))[0] != 7 {
		t.Errorf("features %v; want carol's row 7, 8", x.Data)
	}
}

// Blanks around a split's numbers are ignored, and a bad number is named
// rather than reported as strconv's error.
func TestSplitSpecBlanks(t *testing.T) {
	d, _ := stringGraph(t)
	d.Labels, d.NumClasses = []int32{0, 1, 0, 1}, 2
	if _, err := d.Split("frac:0.5: 0", 1); err != nil {
		t.Error(err)
	}
	if _, err := d.Split("random:1 :0", 1); err != nil {
		t.Error(err)
	}
	if _, err := d.Split("frac:0.5:x", 1); err == nil || !strings.Contains(err.Error(), `"0.5" and "x" are not both numbers`) {
		t.Errorf("frac:0.5:x: %v", err)
	}
}

// Headers of other names than id and node ("user_id,label"): the first
// line names its columns when its first field is no node but a column's
// name and no other field is a number. They were read as a node id that
// is not in the graph.
func TestHeadersOfOtherNames(t *testing.T) {
	d, dir := stringGraph(t)
	if err := d.ReadLabels(writeFile(t, dir, "y.csv", []byte("user_id,community\nalice,x\nbob,y\n"))); err != nil {
		t.Fatal(err)
	}
	if i, _ := d.NodeIndex("bob"); d.NumClasses != 2 || d.Labels[i] != 1 {
		t.Errorf("%d classes, bob's label %d; want 2 and 1", d.NumClasses, d.Labels[i])
	}
	if err := d.ReadFeatures(writeFile(t, dir, "x.csv", []byte("Node Name,age,score\ndave,1,2\nalice,3,4\nbob,5,6\ncarol,7,8\n"))); err != nil {
		t.Fatal(err)
	}
	if x := d.DenseFeatures(); x.Cols != 2 {
		t.Errorf("%d feature columns; want 2", x.Cols)
	}
	if _, err := d.Split("file:"+writeFile(t, dir, "s.csv", []byte("vertex,fold\nalice,train\nbob,train\n")), 1); err != nil {
		t.Error(err)
	}
	// A first line whose other fields hold numbers is data, and an id that
	// is not a node is still an error.
	err := d.ReadFeatures(writeFile(t, dir, "x2.csv", []byte("user_id,1,2\ndave,1,2\n")))
	if err == nil || !strings.Contains(err.Error(), `line 1: node id "user_id" is not a node of the graph`) {
		t.Errorf("%v; want line 1's id refused", err)
	}
}

// Lines that end in a bare carriage return (Excel's "CSV (Macintosh)")
// are lines; the whole file was one line.
func TestCarriageReturnLines(t *testing.T) {
	n, src, _, ids, _, err := parseEdgeListIDs("g.csv", strings.NewReader("source,target\r0,1\r1,2\r"))
	if err != nil || n != 3 || len(src) != 2 || ids != nil {
		t.Errorf("%d nodes, %d edges, ids %q, %v; want 3 numbered nodes and 2 edges", n, len(src), ids, err)
	}
	el, err := ParseEdgeList("g.tsv", strings.NewReader("0\t1\r1\t2\r\r"), 0)
	if err != nil || el.N != 3 || len(el.Src) != 2 {
		t.Errorf("%+v, %v; want 3 nodes and 2 edges", el, err)
	}
	// Windows line ends stay two bytes of one end.
	n, src, _, _, _, err = parseEdgeListIDs("g.csv", strings.NewReader("0,1\r\n1,2\r\n"))
	if err != nil || n != 3 || len(src) != 2 {
		t.Errorf("CRLF: %d nodes, %d edges, %v", n, len(src), err)
	}
}

// A Windows file whose first line's CR is the last byte the reader looks
// at for bare CRs (a first line of 64 KiB less one byte) still reads as
// CRLF lines: it was read as CR lines, each after the first starting with
// a line feed.
func TestCRLFLongFirstLine(t *testing.T) {
	first := strings.Repeat("x", 64<<10-1)
	var lines []string
	err := scanLines("x.csv", strings.NewReader(first+"\r\n1,2\r\n3,4\r\n"), func(_ *lineReader, line []byte) error {
		lines = append(lines, string(line))
		return nil
	})
	if err != nil || len(lines) != 3 || lines[0] != first || lines[1] != "1,2" || lines[2] != "3,4" {
		t.Errorf("%d lines %q, %v; want the first line and \"1,2\", \"3,4\"", len(lines), lines[1:], err)
	}
	// A single line ended by a bare CR is still one line.
	lines = nil
	scanLines("x.csv", strings.NewReader("5,6\r"), func(_ *lineReader, line []byte) error {
		lines = append(lines, string(line))
		return nil
	})
	if len(lines) != 1 || lines[0] != "5,6" {
		t.Errorf("%q; want one line \"5,6\"", lines)
	}
}
