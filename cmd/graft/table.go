package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// textColumn is one column of a text table printed a row at a time (the
// rows of a long benchmark appear as they are measured, so tabwriter's
// buffering does not suit).
type textColumn struct {
	title string
	width int  // in characters, not bytes: shapes hold × and ·
	right bool // numbers align right
}

// textRow formats cells under cols, padding by characters and separating
// columns by one space. A cell wider than its column is kept whole.
func textRow(cols []textColumn, cells ...string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		pad := strings.Repeat(" ", max(0, c.width-utf8.RuneCountInString(cells[i])))
		if c.right {
			b.WriteString(pad + cells[i])
		} else {
			b.WriteString(cells[i] + pad)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// textHeader is the titles of cols as a row.
func textHeader(cols []textColumn) string {
	titles := make([]string, len(cols))
	for i, c := range cols {
		titles[i] = c.title
	}
	return textRow(cols, titles...)
}

// formatSeconds writes a duration with the unit that keeps 3–4 significant
// digits: 812.3 µs, 12.41 ms, 1.208 s.
func formatSeconds(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.1f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2f ms", s*1e3)
	default:
		return fmt.Sprintf("%.3f s", s)
	}
}
