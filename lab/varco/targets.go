package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/graft-gnn/graft/internal/stats"
)

// The targets of communication at a tenth of full's bytes: a configuration
// matches full communication in a cell when its paired Δ is at least
// targetDelta, and the recipe sought matches in nearly every cell with a
// median of at most targetMedian of full's halo bytes and no cell above
// targetMax.
const (
	targetDelta  = -0.3
	targetMedian = 0.10
	targetMax    = 0.2
)

// writeTargets appends the targets' tables: per configuration, the cells
// it matches in and its bytes; then each cell's Δ and bytes. Unlike the
// claims it counts cells with a single paired seed, and says how many.
func writeTargets(md *strings.Builder, cells []*cell) {
	var names []string
	for _, c := range cells {
		for _, n := range c.configNames() {
			if n != "full" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	fmt.Fprintf(md, "## Against the targets\n\nA configuration matches full communication in a cell when its paired Δ (mean over the seeds both ran) is at least %.1f points; the targets ask for a match in nearly every cell with a median of at most %.2f× full communication's halo bytes and no cell above %.1f×. Seeds: the fewest and most paired seeds over the cells.\n\n", targetDelta, targetMedian, targetMax)
	md.WriteString("| config | cells | seeds | matches | worst Δ (cell) | median bytes vs full | most bytes vs full | matches within bytes |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		var n, match, within, fewest, most int
		worst, worstCell := math.Inf(1), ""
		var ratios []float64
		for _, c := range cells {
			d, seeds := c.pairedDelta(name)
			if seeds == 0 {
				continue
			}
			if n == 0 || seeds < fewest {
				fewest = seeds
			}
			n, most = n+1, max(most, seeds)
			r := c.meanHalo(name) / c.meanHalo("full")
			ratios = append(ratios, r)
			if d >= targetDelta {
				match++
				if r <= targetMax {
					within++
				}
			}
			if d < worst {
				worst, worstCell = d, c.shortName()
			}
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(md, "| %s | %d | %d–%d | %d | %+.2f (%s) | %.3f | %.3f | %d |\n", name, n, fewest, most, match, worst, worstCell, stats.Median(ratios), slices.Max(ratios), within)
	}
	md.WriteString("\n**Δ by cell** (points, paired seeds in brackets) and halo bytes as a fraction of full communication's.\n\n| cell | full acc % |")
	for _, name := range names {
		fmt.Fprintf(md, " %s |", name)
	}
	md.WriteString("\n|---|---|" + strings.Repeat("---|", len(names)) + "\n")
	for _, c := range cells {
		if len(c.runs["full"]) == 0 {
			continue
		}
		var acc []float64
		for _, r := range c.runs["full"] {
			acc = append(acc, 100*r.TestAcc)
		}
		fmt.Fprintf(md, "| %s | %.2f |", c.shortName(), stats.Mean(acc))
		for _, name := range names {
			d, seeds := c.pairedDelta(name)
			if seeds == 0 {
				md.WriteString(" |")
				continue
			}
			fmt.Fprintf(md, " %+.2f (%d), %.3f× |", d, seeds, c.meanHalo(name)/c.meanHalo("full"))
		}
		md.WriteString("\n")
	}
	md.WriteString("\n")
}
