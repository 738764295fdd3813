package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// synthRun is a run of config on the toy dataset whose epochs exchange
// halo[i] bytes (half forward, half backward) and reach test accuracy
// test[i]. Validation accuracy rises every epoch, so the model accuracy
// after epoch i is test[i]. Every epoch takes 1 s, 0.5 s of it emulated
// communication, and codec[i] s in the codec (nil: none).
func synthRun(config string, parts int, seed uint64, halo, test, codec []float64) record {
	c, _ := configByName(config)
	r := record{Dataset: "toy", Parts: parts, Partition: "random", Seed: seed, Config: config,
		Codec: c.Codec, Schedule: c.Schedule, Epochs: len(test), Hidden: 8, GradBytes: 1000}
	for i := range test {
		r.Val = append(r.Val, 0.1*float64(i+1))
		r.Test = append(r.Test, test[i])
		r.Fwd = append(r.Fwd, int64(halo[i]/2))
		r.Bwd = append(r.Bwd, int64(halo[i]/2))
		r.HaloBytes += int64(halo[i])
		r.EmuSecs = append(r.EmuSecs, 0.5)
		r.Emulated += 0.5
		r.EpochSec = append(r.EpochSec, 1)
		if codec != nil {
			r.CodecSec = append(r.CodecSec, codec[i])
		} else {
			r.CodecSec = append(r.CodecSec, 0)
		}
	}
	r.TestAcc = test[len(test)-1]
	return r
}

func repeat(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// synthResults is a small sweep whose report is worked out by hand:
//
//   - cell toy N=2 random, seeds 1 and 2: full communication (2 MB an
//     epoch), varco (1, 0.5, 0.5, 1 MB; the same accuracy as full, Δ 0) and
//     every fixed ratio R (2/R MB an epoch; final accuracy 62.5%, so Δ is
//     −12.5 and −25 points, −18.75 ± 8.84);
//   - cell toy N=4 random, seed 1 only: full and varco. With one seed of
//     full communication it has its own table but no say in the claims.
func synthResults() []record {
	const mb = 1e6
	fullTest := [][]float64{{0.25, 0.5, 0.625, 0.75}, {0.25, 0.5, 0.75, 0.875}}
	varcoHalo := []float64{mb, mb / 2, mb / 2, mb}
	varcoCodec := []float64{0.1, 0.05, 0.05, 0.1}
	var rs []record
	for i, seed := range []uint64{1, 2} {
		rs = append(rs,
			synthRun("full", 2, seed, repeat(2*mb, 4), fullTest[i], nil),
			synthRun("varco", 2, seed, varcoHalo, fullTest[i], varcoCodec))
		for _, c := range configs {
			if n, ok := strings.CutPrefix(c.Name, "fixed-"); ok {
				r, _ := strconv.ParseFloat(n, 64)
				rs = append(rs, synthRun(c.Name, 2, seed, repeat(2*mb/r, 4), []float64{0.25, 0.5, 0.5, 0.625}, nil))
			}
		}
	}
	return append(rs,
		synthRun("full", 4, 1, repeat(2*mb, 4), fullTest[0], nil),
		synthRun("varco", 4, 1, varcoHalo, fullTest[0], varcoCodec))
}

func TestCurves(t *testing.T) {
	r := synthRun("varco", 2, 1, []float64{1000, 500, 500, 1000}, []float64{0.5, 0.25, 0.75, 0.625}, nil)
	r.Val = []float64{0.5, 0.4, 0.6, 0.6} // epoch 3 stays the best: a tie does not replace it
	if got, want := cumHalo(r), []float64{1000, 1500, 2000, 3000}; !slices.Equal(got, want) {
		t.Errorf("cumHalo = %v, want %v", got, want)
	}
	if got, want := cumEmulated(r), []float64{0.5, 1, 1.5, 2}; !slices.Equal(got, want) {
		t.Errorf("cumEmulated = %v, want %v", got, want)
	}
	if got, want := modelAcc(r), []float64{0.5, 0.5, 0.75, 0.75}; !slices.Equal(got, want) {
		t.Errorf("modelAcc = %v, want %v (the test accuracy at the best validation so far)", got, want)
	}
	for _, c := range []struct {
		budget float64
		want   float64
	}{
		{999, math.NaN()}, // not even the first epoch fits
		{1000, 0.5},
		{1999, 0.5},
		{2000, 0.75},
		{1e9, 0.75},
	} {
		if got := accWithin(r, c.budget); got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("accWithin(%g bytes) = %v, want %v", c.budget, got, c.want)
		}
	}
}

func TestGB(t *testing.T) {
	for _, c := range []struct {
		bytes float64
		want  string
	}{
		{1000, "1 kB"},
		{999_999, "1000 kB"},
		{3e6, "3.0 MB"},
		{1.234e9, "1.23 GB"},
	} {
		if got := gb(c.bytes); got != c.want {
			t.Errorf("gb(%g) = %q, want %q", c.bytes, got, c.want)
		}
	}
}

func TestClaimCellsNeedTwoSeedsOfFull(t *testing.T) {
	cells := cellsOf(synthResults())
	got, epochs, hidden := claimCells(cells)
	if len(got) != 1 || got[0].Parts != 2 || epochs != 4 || hidden != 8 {
		t.Fatalf("claim cells %v (epochs %d, hidden %d), want only toy N=2 (4 epochs, hidden 8)", got, epochs, hidden)
	}
	c := got[0]
	for _, tc := range []struct {
		config string
		delta  float64
		seeds  int
		halo   float64
	}{
		{"varco", 0, 2, 3e6},
		{"fixed-2", -18.75, 2, 4e6},
		{"fixed-128", -18.75, 2, 8e6 / 128},
		{"quant4", math.NaN(), 0, math.NaN()}, // not run
	} {
		d, n := c.pairedDelta(tc.config)
		if n != tc.seeds || (d != tc.delta && !math.IsNaN(tc.delta)) || math.IsNaN(d) != math.IsNaN(tc.delta) {
			t.Errorf("%s: paired Δ %v over %d seeds, want %v over %d", tc.config, d, n, tc.delta, tc.seeds)
		}
		if h := c.meanHalo(tc.config); h != tc.halo && !(math.IsNaN(h) && math.IsNaN(tc.halo)) {
			t.Errorf("%s: mean halo %v, want %v", tc.config, h, tc.halo)
		}
	}
}

// TestReport writes the report of the synthetic sweep and checks the rows
// worked out by hand in synthResults.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.jsonl")
	var jsonl []byte
	for _, r := range synthResults() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		jsonl = append(append(jsonl, b...), '\n')
	}
	if err := os.WriteFile(in, jsonl, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reportCmd([]string{"-in", in, "-dir", dir}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		// The claims: only the N=2 cell has two seeds of full communication.
		"Over the 1 cells of 4 epochs, hidden 8, with full communication on at least two seeds (toy N=2 random).",
		// Matches full communication: varco does (Δ 0) with 3/8 of its bytes.
		"| varco | 1 | 1 | +0.00 (toy N=2 random) | 0.375 | 1.00 | 0 |",
		"| fixed-2 | 1 | 0 | -18.75 (toy N=2 random) | 0.500 | 1.33 | 0 |",
		// Δ by cell, configurations in the sweep's order, and the bytes.
		"| toy N=2 random | -18.75 | -18.75 | -18.75 | -18.75 | -18.75 | -18.75 | -18.75 | +0.00 |",
		"| bytes vs full | 0.50× | 0.25× | 0.12× | 0.06× | 0.03× | 0.02× | 0.01× | 0.38× |",
		// Against the best fixed ratio at each budget (62.5% wherever
		// fixed-128 fits all epochs): varco has no epoch within 2-10%, 50 at
		// 20%, then 68.75 and 81.25: four wins of eight, one at ≤ 30%.
		"| varco | 8 | 4 | 1 | 3 |",
		// Fixed compression loses accuracy in the one cell.
		"| fixed-2 | 1 | 1 | -18.75 | 0.500 |",
		"| fixed-128 | 1 | 1 | -18.75 | 0.008 |",
		// The N=2 cell's table: mean ± std over two seeds, paired Δ, bytes
		// against full and varco, the codec share's median (max).
		"## toy, N = 2, random, 4 epochs, hidden 8",
		"| full | none | fixed:1 | 2 | 81.25 ± 8.84 | +0.00 ± 0.00 | 8.0 MB | 1.000 | 2.67 | 1 kB | 2.0 | 0.0 (0.0) |",
		"| fixed-2 | truncate | fixed:2 | 2 | 62.50 ± 0.00 | -18.75 ± 8.84 | 4.0 MB | 0.500 | 1.33 | 1 kB | 2.0 | 0.0 (0.0) |",
		"| varco | truncate | linear:128:1.5:5 | 2 | 81.25 ± 8.84 | +0.00 ± 0.00 | 3.0 MB | 0.375 | 1.00 | 1 kB | 2.0 | 7.5 (10.0) |",
		// Its budget table: budgets of 0.16 to 8 MB; bold is the best,
		// ties included.
		"| full | – | – | – | – | 25.00 | 50.00 | 50.00 | **81.25** |",
		"| fixed-2 | – | – | – | 25.00 | 50.00 | 62.50 | 62.50 | 62.50 |",
		"| fixed-16 | 25.00 | 50.00 | **62.50** | **62.50** | 62.50 | 62.50 | 62.50 | 62.50 |",
		"| varco | – | – | – | 50.00 | **68.75** | **81.25** | **81.25** | **81.25** |",
		// The N=4 cell: one seed, so no spread.
		"## toy, N = 4, random, 4 epochs, hidden 8",
		"| full | none | fixed:1 | 1 | 75.00 | +0.00 | 8.0 MB | 1.000 | 2.67 | 1 kB | 2.0 | 0.0 (0.0) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks\n\t%s", want)
		}
	}
	if t.Failed() {
		t.Logf("results.md:\n%s", md)
	}
	for _, cell := range []string{"toy-n2-random", "toy-n4-random"} {
		for _, plot := range []string{"bytes.svg", "bytes.png", "time.svg", "time.png"} {
			if fi, err := os.Stat(filepath.Join(dir, cell+"-"+plot)); err != nil || fi.Size() == 0 {
				t.Errorf("plot %s-%s: %v", cell, plot, err)
			}
		}
	}
}

// TestCellPanel checks the plots' panels: bytes on a log axis, the y axis
// from just below the curves' settled part, the authors' configurations
// wide, fixed ratios dashed, and no two lines of a cell alike, even with
// every configuration in it.
func TestCellPanel(t *testing.T) {
	c := cellsOf(synthResults())[0] // toy N=2: full, varco and every fixed ratio
	byBytes, byTime := cellPanel(c, "bytes"), cellPanel(c, "time")
	if !byBytes.LogX || byTime.LogX {
		t.Errorf("log x axis: bytes %v, time %v; want only bytes", byBytes.LogX, byTime.LogX)
	}
	// Over the last three epochs the lowest mean accuracy is the fixed
	// ratios' 50% at epoch 2.
	if byBytes.YMin == nil || *byBytes.YMin != 48 {
		t.Errorf("y axis from %v, want 48, 2 points below the fixed ratios' 50%%", byBytes.YMin)
	}
	if s := byTime.Series[0]; s.Name != "full" || !slices.Equal(s.X, []float64{0.5, 1, 1.5, 2}) || !slices.Equal(s.Y, []float64{25, 50, 68.75, 81.25}) {
		t.Errorf("full against time: %+v, want the mean over seeds at 0.5 s an epoch", s)
	}
	for _, s := range byBytes.Series {
		wide, dashed := s.Width > 0, s.Dash == 1
		if wide != slices.Contains(emphasised, s.Name) || dashed != strings.HasPrefix(s.Name, "fixed-") {
			t.Errorf("%s: width %g, dash %d", s.Name, s.Width, s.Dash)
		}
	}

	var all []record
	for _, cf := range configs {
		all = append(all, synthRun(cf.Name, 2, 1, repeat(1e6, 4), []float64{0.5, 0.5, 0.5, 0.5}, nil))
	}
	type look struct{ color, dash int }
	seen := map[look]string{}
	for _, s := range cellPanel(cellsOf(all)[0], "bytes").Series {
		l := look{s.Color, s.Dash}
		if other, ok := seen[l]; ok {
			t.Errorf("%s and %s are drawn alike: colour %d, dash %d", other, s.Name, s.Color, s.Dash)
		}
		seen[l] = s.Name
	}
	if len(seen) != len(configs) {
		t.Errorf("%d lines, want one per configuration, %d", len(seen), len(configs))
	}
}

// Cells that differ only in epochs or width get plots of their own; the
// smallest keeps the short name results.md has always linked.
func TestCellPlotStemsAreUnique(t *testing.T) {
	recs := []record{
		{Dataset: "toy", Parts: 4, Partition: "random", Epochs: 300, Hidden: 256, Config: "full"},
		{Dataset: "toy", Parts: 4, Partition: "random", Epochs: 100, Hidden: 64, Config: "full"},
		{Dataset: "toy", Parts: 2, Partition: "random", Epochs: 100, Hidden: 64, Config: "full"},
	}
	var got []string
	for _, c := range cellsOf(recs) {
		got = append(got, c.file())
	}
	want := "toy-n2-random toy-n4-random toy-n4-random-e300-h256"
	if strings.Join(got, " ") != want {
		t.Errorf("plot stems %q, want %q", strings.Join(got, " "), want)
	}
}

// The targets' table counts a cell as a match at Δ ≥ −0.3 and reports the
// median and largest bytes against full communication.
func TestWriteTargets(t *testing.T) {
	recs := []record{
		synthRun("full", 2, 1, []float64{100}, []float64{0.900}, nil),
		synthRun("full", 4, 1, []float64{100}, []float64{0.900}, nil),
		synthRun("delta:2:0:0+last", 2, 1, []float64{8}, []float64{0.898}, nil),  // Δ −0.2, 0.08×
		synthRun("delta:2:0:0+last", 4, 1, []float64{30}, []float64{0.895}, nil), // Δ −0.5, 0.30×
	}
	var md strings.Builder
	writeTargets(&md, cellsOf(recs))
	want := "| delta:2:0:0+last | 2 | 1–1 | 1 | -0.50 (toy N=4 random) | 0.190 | 0.300 | 1 |"
	if !strings.Contains(md.String(), want) {
		t.Fatalf("no row %q in\n%s", want, md.String())
	}
	if !strings.Contains(md.String(), "| toy N=2 random | 90.00 | -0.20 (1), 0.080× |") {
		t.Fatalf("the per-cell table is wrong:\n%s", md.String())
	}
}

// The equal-budget target counts, per configuration, the (cell, budget)
// pairs at or above its own bytes where it beats the best fixed ratio
// within the budget, the fixed ratios taken from another results file.
func TestWriteTargetBudgets(t *testing.T) {
	recs := []record{
		synthRun("full", 2, 1, []float64{100}, []float64{0.900}, nil),
		synthRun("delta:2:0:0+last", 2, 1, []float64{8}, []float64{0.899}, nil), // 0.08× full's bytes
	}
	var fixed []record
	for _, f := range []struct {
		ratio float64
		test  float64
	}{{2, 0.900}, {4, 0.895}, {8, 0.890}, {16, 0.880}, {32, 0.870}, {64, 0.860}, {128, 0.850}} {
		fixed = append(fixed, synthRun(fmt.Sprintf("fixed-%g", f.ratio), 2, 1, []float64{100 / f.ratio}, []float64{f.test}, nil))
	}
	var md strings.Builder
	writeTargetBudgets(&md, withFixed(cellsOf(recs), fixed))
	// Budgets 0.1, 0.2, 0.3, 0.5, 0.7 and 1 are at or above 0.08×; fixed-2
	// (0.5×, 90.0%) beats 89.9% from budget 0.5 on.
	want := "| delta:2:0:0+last | 1 | 6 | 3 | -0.10 (toy N=2 random, 0.5) |"
	if !strings.Contains(md.String(), want) {
		t.Fatalf("no row %q in\n%s", want, md.String())
	}
	md.Reset()
	writeTargetBudgets(&md, withFixed(cellsOf(recs), fixed[:6]))
	if strings.Contains(md.String(), "| delta") {
		t.Fatalf("a cell without every fixed ratio was counted:\n%s", md.String())
	}
}

// The checked-in results pages are what the report makes of the checked-in
// runs, to the byte: a page edited by hand, or runs added without
// regenerating it, fail here (go run ./lab/varco report, or with -targets
// as scripts/delta.sh runs it, rewrites them).
func TestResultsPagesMatchTheirRuns(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, p := range []struct{ runs, page, fixed string }{
		{"docs/varco/results.jsonl", "docs/varco/results.md", ""},
		{"docs/varco/delta/results.jsonl", "docs/varco/delta/results.md", "docs/varco/results.jsonl"},
	} {
		recs, err := readRecords(filepath.Join(root, p.runs))
		if err != nil {
			t.Fatal(err)
		}
		var fixed []record
		if p.fixed != "" {
			if fixed, err = readRecords(filepath.Join(root, p.fixed)); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(filepath.Join(root, p.page))
		if err != nil {
			t.Fatal(err)
		}
		got := reportMarkdown(cellsOf(recs), fixed, p.runs, p.fixed != "")
		if got == string(want) {
			continue
		}
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("%s differs from what its runs give, from line %d:\n\tpage: %.200s\n\truns: %.200s", p.page, i+1, w, g)
				break
			}
		}
	}
}
