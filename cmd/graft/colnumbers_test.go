package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A features CSV headed by its column numbers, as pandas writes a frame of
// integer columns, loads with that line as its header; one with a row
// missing says how it counted the line.
func TestFeaturesHeadedByColumnNumbers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edges := write("g.edges", "0 1\n1 2\n2 3\n")
	x := write("x.csv", "0,1,2\n1,0,0\n0,1,0\n0,0,1\n1,1,1\n")
	code, stdout, stderr := runGraft(t, "data", "info", edges, "--features", x, "--json")
	var info struct {
		Nodes    int `json:"nodes"`
		Features int `json:"features"`
	}
	if err := json.Unmarshal([]byte(stdout), &info); code != 0 || err != nil || info.Nodes != 4 || info.Features != 3 {
		t.Fatalf("exit %d, %+v (%v), stderr %q; want 4 nodes with 3 features", code, info, err, stderr)
	}
	short := write("short.csv", "0,1,2\n1,0,0\n0,1,0\n")
	checkFailure(t, []string{"data", "info", edges, "--features", short}, 1,
		`short.csv: 3 feature rows for 4 nodes; that counts line 1, "0,1,2", which may be a header numbering the columns (without it, 2 rows; to mark a header, name the columns with words (f0,f1,...), or start the line with "#")`)
}
