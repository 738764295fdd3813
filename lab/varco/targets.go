package main

import (
	"fmt"
	"maps"
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

// withFixed is cells with the fixed-ratio runs of the same cells in
// fixed added, for the equal-budget comparison: the fixed ratios were run
// by the VARCO grid (scripts/varco.sh), not again beside each new
// configuration. Cells are copied; their own runs are kept as they are.
func withFixed(cells []*cell, fixed []record) []*cell {
	byName := map[string]*cell{}
	for _, c := range cellsOf(fixed) {
		byName[c.name()] = c
	}
	out := make([]*cell, len(cells))
	for i, c := range cells {
		cc := *c
		cc.runs = maps.Clone(c.runs)
		if f := byName[c.name()]; f != nil {
			for name, rs := range f.runs {
				if strings.HasPrefix(name, "fixed-") && len(cc.runs[name]) == 0 {
					cc.runs[name] = rs
				}
			}
		}
		out[i] = &cc
	}
	return out
}

// writeTargetBudgets is the equal-budget target: at every byte budget at or
// above a configuration's own bytes (the budgets of the per-cell tables, as
// fractions of full communication's), its model accuracy within the budget
// beats the best fixed ratio's. Cells count where every fixed ratio ran.
func writeTargetBudgets(md *strings.Builder, cells []*cell) {
	fmt.Fprintf(md, "**At equal byte budgets.** Per configuration, every (cell, budget) pair with a budget at or above the configuration's own halo bytes in that cell (budgets %v of full communication's), in the cells where all %d fixed ratios ran: the configuration's mean model accuracy within the budget against the best fixed ratio's (strict wins; the fixed ratios' runs come from the VARCO grid, docs/varco/results.jsonl). Worst is the configuration's accuracy minus the best fixed ratio's at the pair where it falls furthest behind (or leads least).\n\n", budgets, fixedConfigs())
	md.WriteString("| config | cells | (cell, budget) pairs | wins | worst (cell, budget) |\n|---|---|---|---|---|\n")
	var names []string
	for _, c := range cells {
		for _, n := range c.configNames() {
			if n != "full" && !strings.HasPrefix(n, "fixed-") && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	for _, name := range names {
		var ncells, pairs, wins int
		worst, where := math.Inf(1), ""
		for _, c := range cells {
			best, all := c.bestFixedAcc()
			if len(c.runs[name]) == 0 || len(c.runs["full"]) == 0 || !all {
				continue
			}
			ncells++
			own := c.meanHalo(name) / c.meanHalo("full")
			acc := c.budgetAcc(name)
			for j, b := range budgets {
				if b < own*(1-1e-9) {
					continue
				}
				pairs++
				if acc[j] > best[j] {
					wins++
				}
				if d := acc[j] - best[j]; d < worst || math.IsNaN(d) {
					worst, where = d, fmt.Sprintf("%s, %g", c.shortName(), b)
				}
			}
		}
		if pairs > 0 {
			fmt.Fprintf(md, "| %s | %d | %d | %d | %+.2f (%s) |\n", name, ncells, pairs, wins, worst, where)
		}
	}
	md.WriteString("\n")
}
