package partition

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestReadAssignment(t *testing.T) {
	cases := []struct {
		name  string
		input string
		n, k  int
		want  []int32
		wantK int
		err   string
	}{
		{"ok", "0\n1\n1\n0\n", 4, 0, []int32{0, 1, 1, 0}, 2, ""},
		{"given k", "0\n1\n", 2, 4, []int32{0, 1}, 4, ""},
		{"blank lines and spaces", "\n 2 \n\n0\r\n1", 3, 0, []int32{2, 0, 1}, 3, ""},
		{"too short", "0\n1\n", 3, 0, nil, 0, "2 entries for 3 nodes"},
		{"too long", "0\n1\n0\n", 2, 0, nil, 0, "more than 2 entries"},
		{"out of range", "0\n5\n", 2, 4, nil, 0, "line 2: part 5 out of range [0,4)"},
		{"negative", "0\n-1\n", 2, 0, nil, 0, "line 2: part -1 is negative"},
		{"not a number", "0\nx\n", 2, 0, nil, 0, `line 2: "x" is not a part id`},
		{"two fields", "0 1\n", 1, 0, nil, 0, "is not a part id"},
		{"overflow", "99999999999\n", 1, 0, nil, 0, "is not a part id"},
		{"huge line", strings.Repeat("1", 10000), 1, 0, nil, 0, "too long"},
		{"empty graph", "", 0, 0, []int32{}, 0, ""},
		{"more parts than nodes", "0\n2147483646\n", 2, 0, nil, 0, "line 2: part 2147483646 would make more parts than the graph's 2 nodes"},
		{"as many parts as nodes", "1\n0\n", 2, 0, []int32{1, 0}, 2, ""},
		{"more parts than nodes, given", "0\n3\n", 2, 4, []int32{0, 3}, 4, ""},
	}
	for _, c := range cases {
		parts, k, err := ReadAssignment(strings.NewReader(c.input), c.n, c.k)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(parts, c.want) || k != c.wantK {
			t.Errorf("%s: got %v, k=%d, %v; want %v, k=%d", c.name, parts, k, err, c.want, c.wantK)
		}
	}
}

func TestAssignmentRoundTrip(t *testing.T) {
	g := gridGraph(t, 10, 10)
	parts, err := Random{}.Partition(g, 7, Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteAssignment(&buf, parts); err != nil {
		t.Fatal(err)
	}
	back, k, err := ReadAssignment(&buf, g.N, 0)
	if err != nil || k != 7 || !slices.Equal(back, parts) {
		t.Fatalf("round trip: k=%d err=%v equal=%v", k, err, slices.Equal(back, parts))
	}
}

func TestWriteMETISGraph(t *testing.T) {
	// Triangle 0-1-2 plus a self loop on 2 (left out) and isolated node 3.
	g := undirectedFromPairs(t, 4, [][2]int32{{0, 1}, {1, 2}, {0, 2}})
	g.Neighbors = append(g.Neighbors[:g.Offsets[3]:g.Offsets[3]], 2)
	g.Offsets[3]++
	g.Offsets[4]++
	var buf bytes.Buffer
	if err := WriteMETISGraph(&buf, g); err != nil {
		t.Fatal(err)
	}
	if want := "4 3\n2 3\n1 3\n1 2\n\n"; buf.String() != want {
		t.Errorf("plain: got %q, want %q", buf.String(), want)
	}
	buf.Reset()
	if err := WriteMETISGraph(&buf, g, []int32{1, 1, 1, 1}, []int32{0, 1, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if want := "4 3 010 2\n1 0 2 3\n1 1 1 3\n1 0 1 2\n1 1\n"; buf.String() != want {
		t.Errorf("weighted: got %q, want %q", buf.String(), want)
	}
	if err := WriteMETISGraph(&buf, g, []int32{1}); err == nil {
		t.Error("accepted a short weight list")
	}
}

// FuzzReadAssignment checks that no input makes the reader panic, and that
// whatever it accepts is a valid assignment that survives a round trip.
func FuzzReadAssignment(f *testing.F) {
	f.Add("0\n1\n2\n", 3, 0)
	f.Add("0\n1\n", 3, 2)
	f.Add("-1\n", 1, 0)
	f.Add(" 7 \r\n\n3", 2, 8)
	f.Add("1e3\n", 1, 0)
	f.Add("0\n2147483646\n", 2, 0) // a part count callers would allocate for
	f.Fuzz(func(t *testing.T, input string, n, k int) {
		if n < 0 || n > 1<<16 || k < 0 || k > 1<<20 {
			return
		}
		parts, gotK, err := ReadAssignment(strings.NewReader(input), n, k)
		if err != nil {
			return
		}
		if err := CheckAssignment(parts, n, max(gotK, 1)); err != nil && n > 0 {
			t.Fatalf("accepted an invalid assignment: %v", err)
		}
		if k == 0 && gotK > max(n, 1) {
			t.Fatalf("%d parts for %d nodes", gotK, n)
		}
		var buf bytes.Buffer
		if err := WriteAssignment(&buf, parts); err != nil {
			t.Fatal(err)
		}
		back, _, err := ReadAssignment(&buf, n, k)
		if err != nil || !slices.Equal(back, parts) {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}
