package main

import (
	"strings"
	"testing"
)

// graft bench kernels' text columns line up under their titles, counted in
// characters (shapes hold × and ·): left-aligned columns start where their
// title starts, numbers end where theirs ends; the triad row shows its
// size and time like every other.
func TestBenchKernelsColumnsAlign(t *testing.T) {
	code, stdout, stderr := runGraft(t, "bench", "kernels", "--quick", "--reps", "1")
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("want a header and rows, got:\n%s", stdout)
	}
	header := []rune(lines[0])
	span := func(title string) (start, end int) {
		i := strings.Index(lines[0], title)
		if i < 0 {
			t.Fatalf("header %q lacks %q", lines[0], title)
		}
		start = len([]rune(lines[0][:i]))
		return start, start + len([]rune(title))
	}
	at := func(r []rune, i int) rune {
		if i < 0 || i >= len(r) {
			return ' '
		}
		return r[i]
	}
	for _, line := range lines[1:] {
		row := []rune(line)
		for _, title := range []string{"kernel", "impl", "shape"} {
			s, _ := span(title)
			if at(row, s-1) != ' ' || at(row, s) == ' ' {
				t.Errorf("column %q does not start at character %d in\n%s\n%s", title, s, string(header), line)
			}
		}
		for _, title := range []string{"time", "rate", "of triad", "vs fp32", "allocs"} {
			_, e := span(title)
			if at(row, e) != ' ' || (at(row, e-1) == ' ' && title != "of triad" && title != "vs fp32" && !(title == "allocs" && strings.HasPrefix(line, "triad"))) {
				t.Errorf("column %q does not end at character %d in\n%s\n%s", title, e, string(header), line)
			}
		}
	}
	var bf16Rows int
	for _, line := range lines[1:] {
		if strings.Contains(line, "bf16") {
			bf16Rows++
			if !strings.Contains(line, "×  ") && !strings.HasSuffix(line, "×") {
				t.Errorf("bf16 row lacks its speed over float32: %q", line)
			}
		}
	}
	if bf16Rows != 4 { // three GEMM forms at the quick width, and SpMM
		t.Errorf("%d bf16 rows, want 4:\n%s", bf16Rows, stdout)
	}
	triad := lines[1]
	if !strings.HasPrefix(triad, "triad ") || !strings.Contains(triad, "3×65536 float32") ||
		!(strings.Contains(triad, " µs ") || strings.Contains(triad, " ms ")) || !strings.Contains(triad, "GB/s") {
		t.Errorf("triad row lacks its size, time or rate: %q", triad)
	}
}
