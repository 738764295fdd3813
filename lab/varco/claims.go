package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/graft-gnn/graft/internal/stats"
)

// The paper's claims, checked across every cell of the report with full
// communication and at least two seeds: what the per-cell tables show one
// cell at a time.

// pairedDelta is the mean over seeds of config's test accuracy minus the
// same seed's full communication, in points, and how many seeds pair.
func (c *cell) pairedDelta(config string) (float64, int) {
	full := map[uint64]float64{}
	for _, r := range c.runs["full"] {
		full[r.Seed] = r.TestAcc
	}
	var sum float64
	n := 0
	for _, r := range c.runs[config] {
		if f, ok := full[r.Seed]; ok {
			sum += 100 * (r.TestAcc - f)
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}

// pairedCells returns the cells where config pairs with full communication
// on at least two seeds, and its paired Δ in each.
func pairedCells(cells []*cell, config string) (out []*cell, deltas []float64) {
	for _, c := range cells {
		if d, seeds := c.pairedDelta(config); seeds >= 2 {
			out, deltas = append(out, c), append(deltas, d)
		}
	}
	return out, deltas
}

// meanHalo is config's mean halo bytes over seeds (NaN if it has no runs).
func (c *cell) meanHalo(config string) float64 {
	rs := c.runs[config]
	if len(rs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, r := range rs {
		s += float64(r.HaloBytes)
	}
	return s / float64(len(rs))
}

// budgetAcc is config's mean model accuracy within each budget (a
// fraction of full communication's bytes).
func (c *cell) budgetAcc(config string) []float64 {
	full := c.meanHalo("full")
	out := make([]float64, len(budgets))
	for j, b := range budgets {
		var accs []float64
		for _, r := range c.runs[config] {
			accs = append(accs, 100*accWithin(r, b*full))
		}
		out[j] = stats.Mean(accs)
	}
	return out
}

// claimCells are the cells the claims are checked on: those of the model
// setting (iterations, hidden width) with the most cells, with full
// communication on at least two seeds.
func claimCells(cells []*cell) (out []*cell, epochs, hidden int) {
	count := map[[2]int]int{}
	var top [2]int
	for _, c := range cells {
		s := [2]int{c.Epochs, c.Hidden}
		if count[s]++; count[s] > count[top] {
			top = s
		}
	}
	for _, c := range cells {
		if c.Epochs == top[0] && c.Hidden == top[1] && len(c.runs["full"]) >= 2 {
			out = append(out, c)
		}
	}
	return out, top[0], top[1]
}

func writeClaims(md *strings.Builder, all []*cell) {
	cells, epochs, hidden := claimCells(all)
	if len(cells) == 0 {
		return
	}
	var names []string
	for _, c := range cells {
		names = append(names, c.shortName())
	}
	fmt.Fprintf(md, "## The claims across cells\n\nOver the %d cells of %d epochs, hidden %d, with full communication on at least two seeds (%s). Δ is a configuration's paired accuracy difference from full communication (mean over seeds, points); a cell counts when the configuration has at least two seeds there.\n\n", len(cells), epochs, hidden, strings.Join(names, "; "))
	writeMatches(md, cells)
	writeDeltasByCell(md, cells)
	writeBudgetWins(md, cells)
	writeFixedLosses(md, cells)
	md.WriteString("\n")
}

// shortName names a cell in the claims' tables.
func (c *cell) shortName() string {
	return fmt.Sprintf("%s N=%d %s", c.Dataset, c.Parts, c.Partition)
}

// writeMatches is the table of where each configuration matches full
// communication's accuracy, and with how many bytes.
func writeMatches(md *strings.Builder, cells []*cell) {
	md.WriteString("**Matches full communication (Δ ≥ −0.5) and bytes.** Bytes are the median over those cells of the halo bytes as a fraction of full communication's and of the authors' `varco`'s. The last column counts the cells where the configuration matches with at most half of `varco`'s bytes (full communication's accuracy with 2× fewer bytes than the authors' truncation + linear schedule).\n\n")
	md.WriteString("| config | cells | matches | worst Δ (cell) | bytes vs full | bytes vs varco | matches at ≤ 0.5× varco |\n|---|---|---|---|---|---|---|\n")
	for _, cf := range configs {
		if cf.Name == "full" {
			continue
		}
		var n, match, cheap int
		worst, worstCell := math.Inf(1), ""
		var vsFull, vsVarco []float64
		cs, ds := pairedCells(cells, cf.Name)
		for i, c := range cs {
			d := ds[i]
			n++
			if d >= -0.5 {
				match++
			}
			if d < worst {
				worst, worstCell = d, c.shortName()
			}
			h := c.meanHalo(cf.Name)
			vsFull = append(vsFull, h/c.meanHalo("full"))
			if v := c.meanHalo("varco"); !math.IsNaN(v) {
				vsVarco = append(vsVarco, h/v)
				if d >= -0.5 && h <= 0.5*v {
					cheap++
				}
			}
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(md, "| %s | %d | %d | %+.2f (%s) | %.3f | %s | %d |\n", cf.Name, n, match, worst, worstCell, stats.Median(vsFull), medianOrDash(vsVarco), cheap)
	}
}

// writeDeltasByCell is the table of every configuration's Δ in every cell,
// with a last row of their median bytes.
func writeDeltasByCell(md *strings.Builder, cells []*cell) {
	md.WriteString("\n**Δ by cell** (points; \"–\" where the configuration has fewer than two paired seeds), and below it each configuration's median halo bytes over those cells as a fraction of full communication's.\n\n| cell |")
	var shown []string
	for _, cf := range configs {
		if cf.Name == "full" {
			continue
		}
		if cs, _ := pairedCells(cells, cf.Name); len(cs) > 0 {
			shown = append(shown, cf.Name)
			fmt.Fprintf(md, " %s |", cf.Name)
		}
	}
	md.WriteString("\n|---|" + strings.Repeat("---|", len(shown)) + "\n")
	for _, c := range cells {
		fmt.Fprintf(md, "| %s |", c.shortName())
		for _, n := range shown {
			if d, seeds := c.pairedDelta(n); seeds >= 2 {
				fmt.Fprintf(md, " %+.2f |", d)
			} else {
				md.WriteString(" – |")
			}
		}
		md.WriteString("\n")
	}
	md.WriteString("| bytes vs full |")
	for _, n := range shown {
		var rel []float64
		cs, _ := pairedCells(cells, n)
		for _, c := range cs {
			rel = append(rel, c.meanHalo(n)/c.meanHalo("full"))
		}
		fmt.Fprintf(md, " %.2f× |", stats.Median(rel))
	}
	md.WriteString("\n")
}

// writeBudgetWins is the table of how often each configuration that is not
// a fixed ratio beats every fixed ratio at an equal byte budget.
func writeBudgetWins(md *strings.Builder, cells []*cell) {
	fmt.Fprintf(md, "\n**At an equal byte budget, does a configuration beat every fixed ratio?** For each cell and each budget of the per-cell tables, the configuration's mean model accuracy within the budget against the best fixed-ratio truncation's, over the cells that have all %d fixed ratios (fixed ratios with no epoch inside the budget do not compete; a budget where the configuration itself has none counts as a loss). Wins are strict.\n\n| config | (cell, budget) pairs | wins | wins at budgets ≤ 30%% | wins at budgets ≥ 50%% |\n|---|---|---|---|---|\n", fixedConfigs())
	for _, cf := range configs {
		if cf.Name == "full" || strings.HasPrefix(cf.Name, "fixed-") {
			continue
		}
		var pairs, wins, low, high int
		for _, c := range cells {
			if len(c.runs[cf.Name]) < 2 {
				continue
			}
			best, ok := c.bestFixedAcc()
			if !ok {
				continue // only cells with every fixed ratio
			}
			acc := c.budgetAcc(cf.Name)
			for j, b := range budgets {
				pairs++
				if acc[j] > best[j] { // false for NaN
					wins++
					if b <= 0.3 {
						low++
					} else if b >= 0.5 {
						high++
					}
				}
			}
		}
		if pairs > 0 {
			fmt.Fprintf(md, "| %s | %d | %d | %d | %d |\n", cf.Name, pairs, wins, low, high)
		}
	}
}

// bestFixedAcc is, within each budget, the best mean model accuracy of the
// fixed ratios (-Inf where none has an epoch inside it), and whether the
// cell has every fixed ratio.
func (c *cell) bestFixedAcc() ([]float64, bool) {
	best := make([]float64, len(budgets))
	for j := range best {
		best[j] = math.Inf(-1)
	}
	fixed := 0
	for _, f := range configs {
		if !strings.HasPrefix(f.Name, "fixed-") || len(c.runs[f.Name]) == 0 {
			continue
		}
		fixed++
		for j, a := range c.budgetAcc(f.Name) {
			if !math.IsNaN(a) {
				best[j] = max(best[j], a)
			}
		}
	}
	return best, fixed == fixedConfigs()
}

// writeFixedLosses is the table of how much accuracy each fixed ratio loses.
func writeFixedLosses(md *strings.Builder, cells []*cell) {
	md.WriteString("\n**Fixed compression loses accuracy.** Per fixed ratio: the cells where it is more than 0.5 points below full communication, and the mean Δ.\n\n| config | cells | Δ < −0.5 | mean Δ | median bytes vs full |\n|---|---|---|---|---|\n")
	for _, cf := range configs {
		if !strings.HasPrefix(cf.Name, "fixed-") {
			continue
		}
		var n, lose int
		var vsFull []float64
		cs, ds := pairedCells(cells, cf.Name)
		for i, c := range cs {
			n++
			if ds[i] < -0.5 {
				lose++
			}
			vsFull = append(vsFull, c.meanHalo(cf.Name)/c.meanHalo("full"))
		}
		if n > 0 {
			m := stats.Mean(ds)
			fmt.Fprintf(md, "| %s | %d | %d | %+.2f | %.3f |\n", cf.Name, n, lose, m, stats.Median(vsFull))
		}
	}
}

func medianOrDash(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", stats.Median(xs))
}

// fixedConfigs is the number of fixed-ratio configurations the sweep knows.
func fixedConfigs() int {
	n := 0
	for _, cf := range configs {
		if strings.HasPrefix(cf.Name, "fixed-") {
			n++
		}
	}
	return n
}
