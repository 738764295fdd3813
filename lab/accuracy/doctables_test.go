package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A page's table of checked-in runs is this command's output, verbatim,
// between two markers:
//
//	<!-- generated: go run ./lab/accuracy -paired -only '^gcn-' < docs/gradients/results.jsonl -->
//	| configuration | method | seeds | ...
//	<!-- end generated -->
//
// The first names the command, run from the repository's root, that prints
// the table. TestDocTables runs each on its file and fails where the page
// differs; -update rewrites the tables from the files. Other tools' tables
// may take the same markers, naming their own commands: this test skips
// them.
const (
	generatedPrefix = "<!-- generated: "
	accuracyPrefix  = generatedPrefix + "go run ./lab/accuracy"
	generatedEnd    = "<!-- end generated -->"
)

var generatedBegin = regexp.MustCompile(`^<!-- generated: go run \./lab/accuracy((?: [^<]*)?) < (\S+) -->$`)

var updateDocTables = flag.Bool("update", false, "rewrite the pages' generated tables from the runs they name")

// docTables are the generated tables every page must have, in its order:
// the arguments of the marker's command after go run ./lab/accuracy.
var docTables = map[string][]string{
	"docs/gradients.md": {
		"-paired -only '^gcn-' < docs/gradients/results.jsonl",
		"-paired -only '^sage-.*@(none|topk|powersgd|quant)' < docs/gradients/results.jsonl",
	},
	"docs/async.md":     {"-paired -only '^sage-sampled-.*@(none|async|kbatch)$' < docs/gradients/results.jsonl"},
	"docs/minibatch.md": {"-paired < docs/minibatch/results.jsonl"},
	"docs/training.md":  {"-paired < docs/precision/results.jsonl"},
}

// isAccuracyHeader reports whether a line is the header of a table
// summarise prints: such a table must be marked as generated.
func isAccuracyHeader(line string) bool {
	paired, _, _ := strings.Cut(pairedHeader, "%%")
	return line == mainHeader || line == gradHeader || strings.HasPrefix(line, paired)
}

// generatedTable is one marked table of a page.
type generatedTable struct {
	args        string // the command's arguments, with "< FILE"
	flags       string // the arguments before "<"
	runs        string // the file of runs, from the repository's root
	begin, end  int    // the markers' 0-based lines
	marker, got string
}

// generatedTables returns a page's marked tables, and an error for a
// marker that does not parse or is not closed, or for a table of
// summarise's outside the markers.
func generatedTables(page string) ([]generatedTable, error) {
	lines := strings.Split(page, "\n")
	var tables []generatedTable
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if isAccuracyHeader(line) {
			return nil, fmt.Errorf("line %d: a table of lab/accuracy without the markers of a generated table", i+1)
		}
		if !strings.HasPrefix(line, generatedPrefix) {
			if line == generatedEnd {
				return nil, fmt.Errorf("line %d: %s without its beginning", i+1, generatedEnd)
			}
			continue
		}
		begin := i
		for i++; i < len(lines) && lines[i] != generatedEnd; i++ {
			if strings.HasPrefix(lines[i], generatedPrefix) {
				return nil, fmt.Errorf("line %d: a generated table inside the one of line %d", i+1, begin+1)
			}
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: no %s", begin+1, generatedEnd)
		}
		if !strings.HasPrefix(line, accuracyPrefix+" ") && line != accuracyPrefix+" -->" {
			continue // another tool's table
		}
		m := generatedBegin.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: want %s [FLAGS] < FILE -->, have %s", begin+1, accuracyPrefix, line)
		}
		tables = append(tables, generatedTable{
			args: strings.TrimPrefix(m[1]+" < "+m[2], " "), flags: m[1], runs: m[2],
			begin: begin, end: i, marker: line,
			got: strings.Join(lines[begin+1:i], "\n") + "\n",
		})
	}
	return tables, nil
}

// shellWords splits a command line at spaces, as sh does for words without
// quotes and words in single quotes (all the markers need).
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, w.String())
				w.Reset()
			}
			in = false
		case r == '"' || r == '\\' || r == '$' || r == '`':
			if !quoted {
				return nil, fmt.Errorf("%q: only single quotes are understood", s)
			}
			w.WriteRune(r)
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// regenerate prints the table a marker names, from the repository at root.
func regenerate(root string, t generatedTable) (string, error) {
	args, err := shellWords(t.flags)
	if err != nil {
		return "", err
	}
	minLoss, opt, err := parseArgs(args, io.Discard)
	if err != nil {
		return "", err
	}
	if minLoss != "" {
		return "", errors.New("-min-val-loss prints no table")
	}
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(t.runs)))
	if err != nil {
		return "", err
	}
	defer f.Close()
	var out strings.Builder
	if err := summarise(f, &out, opt); err != nil {
		return "", fmt.Errorf("%s: %v", t.runs, err)
	}
	return out.String(), nil
}

// TestDocTables checks that every table the pages show of checked-in runs
// is what lab/accuracy prints from those runs (go test ./lab/accuracy -run
// TestDocTables -update rewrites them).
func TestDocTables(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	seen := map[string]bool{}
	for _, path := range pages {
		name := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		seen[name] = true
		tables, err := generatedTables(string(b))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var args []string
		for _, tb := range tables {
			args = append(args, tb.args)
		}
		if want := docTables[name]; !slices.Equal(args, want) {
			t.Errorf("%s: generated tables of\n\t%s\nwant\n\t%s", name, strings.Join(args, "\n\t"), strings.Join(want, "\n\t"))
		}
		lines := strings.Split(string(b), "\n")
		var updated []string
		last := 0
		for _, tb := range tables {
			want, err := regenerate(root, tb)
			if err != nil {
				t.Errorf("%s:%d: %v", name, tb.begin+1, err)
				continue
			}
			if want != tb.got && !*updateDocTables {
				t.Errorf("%s:%d: the table differs from the output of go run ./lab/accuracy %s (go test ./lab/accuracy -run TestDocTables -update rewrites it)\n%s",
					name, tb.begin+1, tb.args, lineDiff(tb.got, want))
			}
			updated = append(append(updated, lines[last:tb.begin+1]...), strings.Split(strings.TrimSuffix(want, "\n"), "\n")...)
			last = tb.end
		}
		if *updateDocTables && len(tables) > 0 {
			updated = append(updated, lines[last:]...)
			if s := strings.Join(updated, "\n"); s != string(b) {
				if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote %s", name)
			}
		}
	}
	for name := range docTables {
		if !seen[name] {
			t.Errorf("%s: no such page", name)
		}
	}
}

// lineDiff lists the lines of have and want that differ, by position.
func lineDiff(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := range max(len(h), len(w)) {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			fmt.Fprintf(&b, "line %d of the table:\n\thave %s\n\twant %s\n", i+1, hl, wl)
		}
	}
	return b.String()
}

func TestShellWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" -paired  -only '^a b$' ", []string{"-paired", "-only", "^a b$"}},
		{"-only=x'y'z", []string{"-only=xyz"}},
		{"''", []string{""}},
	} {
		got, err := shellWords(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"'open", `"x"`, "$X"} {
		if _, err := shellWords(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestGeneratedTables(t *testing.T) {
	const begin = "<!-- generated: go run ./lab/accuracy -paired < docs/x/results.jsonl -->"
	// Another tool's table is skipped, its markers checked.
	tables, err := generatedTables("<!-- generated: go run ./lab/varco report -->\n| x |\n" + generatedEnd + "\n" +
		begin + "\n| a |\n| b |\n" + generatedEnd + "\nmore\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].begin != 3 || tables[0].args != "-paired < docs/x/results.jsonl" || tables[0].runs != "docs/x/results.jsonl" || tables[0].got != "| a |\n| b |\n" {
		t.Errorf("tables %+v", tables)
	}
	for _, c := range []struct{ name, page, want string }{
		{"unclosed", begin + "\n| a |\n", "line 1: no " + generatedEnd},
		{"end alone", "x\n" + generatedEnd, "line 2: " + generatedEnd + " without its beginning"},
		{"nested", begin + "\n" + begin + "\n" + generatedEnd, "line 2: a generated table inside the one of line 1"},
		{"no file of runs", "<!-- generated: go run ./lab/accuracy -paired -->\n" + generatedEnd, "line 1: want <!-- generated: go run ./lab/accuracy [FLAGS] < FILE -->"},
		{"unmarked table", "x\n" + gradHeader + "\n", "line 2: a table of lab/accuracy without the markers"},
		{"unmarked paired table", fmt.Sprintf(pairedHeader, "fp32"), "line 1: a table of lab/accuracy without the markers"},
	} {
		if _, err := generatedTables(c.page); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
