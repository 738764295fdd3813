//go:build metis

package partition

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/datatest"
	"github.com/graft-gnn/graft/internal/sysstat"
)

// TestCompareMETIS puts Multilevel beside METIS (the same library gpmetis
// uses, through the cgo binding) in one process: same graph, same
// evaluator, CPU time from getrusage around each call. It runs only when
// GRAFT_COMPARE names the graphs (comma-separated dataset names, rmat:S:E
// for graft's R-MAT, or rmatclean:S:E for the same with isolated nodes
// removed and ids randomly permuted); GRAFT_COMPARE_KS overrides K.
//
//	GRAFT_DATA=DIR GRAFT_COMPARE=cnr-2000,rmatclean:20:16000000 \
//	    go test -tags metis -run CompareMETIS -v ./partition
func TestCompareMETIS(t *testing.T) {
	spec := os.Getenv("GRAFT_COMPARE")
	if spec == "" {
		t.Skip("GRAFT_COMPARE is not set")
	}
	ks := []int{2, 4, 8, 16}
	if s := os.Getenv("GRAFT_COMPARE_KS"); s != "" {
		ks = ks[:0]
		for _, f := range strings.Fields(s) {
			k, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
	}
	fmt.Printf("%-24s %3s | %9s %7s %5s | %9s %7s %5s | %6s %6s\n", "graph", "K", "metis_cut", "cpu_s", "imb", "ml_cut", "cpu_s", "imb", "cut_x", "cpu_x")
	for _, name := range strings.Split(spec, ",") {
		g := compareGraph(t, name)
		for _, k := range ks {
			var cut [2]int64
			var cpu [2]float64
			var imb [2]float64
			for i := range 2 {
				var parts []int32
				var err error
				if i == 0 {
					parts, cpu[i], err = runGpmetis(t, g, k)
				} else {
					c0 := sysstat.CPUTime()
					parts, err = compareML().Partition(g, k, Options{Seed: 1})
					cpu[i] = (sysstat.CPUTime() - c0).Seconds()
				}
				if err != nil {
					t.Fatal(err)
				}
				r, err := Evaluate(g, parts, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				cut[i], imb[i] = r.EdgeCut, r.Imbalance
			}
			fmt.Printf("%-24s %3d | %9d %7.3f %5.3f | %9d %7.3f %5.3f | %6.3f %6.3f\n", name, k,
				cut[0], cpu[0], imb[0], cut[1], cpu[1], imb[1], float64(cut[1])/float64(max(cut[0], 1)), cpu[1]/cpu[0])
		}
	}
}

func compareGraph(t *testing.T, name string) *graph.Graph {
	t.Helper()
	if s, ok := strings.CutPrefix(name, "rmat:"); ok {
		return rmatSpec(t, s)
	}
	if s, ok := strings.CutPrefix(name, "rmatclean:"); ok {
		return cleanRMAT(t, rmatSpec(t, s))
	}
	d, err := dataset.Load(name, datatest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	g := d.Graph
	if !g.IsSymmetric() {
		g = g.Symmetrize()
	}
	return g
}

func rmatSpec(t *testing.T, s string) *graph.Graph {
	var scale int
	var edges int64
	if _, err := fmt.Sscanf(strings.Replace(s, ":", " ", 1), "%d %d", &scale, &edges); err != nil {
		t.Fatal(err)
	}
	return must(t)(graph.RMAT(scale, edges, graph.RMATA, graph.RMATB, graph.RMATC, 1))
}

// cleanRMAT drops isolated nodes and scrambles the ids, so that neither
// partitioner gets free balance weight or an id order that follows degree.
func cleanRMAT(t *testing.T, g *graph.Graph) *graph.Graph {
	var keep []int32
	for v := 0; v < g.N; v++ {
		if g.Degree(v) > 0 {
			keep = append(keep, int32(v))
		}
	}
	sub, _, _, err := g.InducedSubgraph(keep)
	if err != nil {
		t.Fatal(err)
	}
	perm := make([]int32, sub.N)
	for i, p := range newRand(7).Perm(sub.N) {
		perm[i] = int32(p)
	}
	return must(t)(sub.Permute(perm))
}

// runGpmetis partitions g with the gpmetis program, as
// scripts/partition-compare.sh does, and returns its assignment and the
// partitioning time it reports.
func runGpmetis(t *testing.T, g *graph.Graph, k int) ([]int32, float64, error) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.graph")
	f, err := os.Create(path)
	if err != nil {
		return nil, 0, err
	}
	if err := WriteMETISGraph(f, g); err != nil {
		return nil, 0, err
	}
	f.Close()
	out, err := exec.Command("gpmetis", "-seed=1", path, strconv.Itoa(k)).CombinedOutput()
	if err != nil {
		return nil, 0, fmt.Errorf("gpmetis: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Partitioning:\s*([0-9.]+) sec`).FindSubmatch(out)
	if m == nil {
		return nil, 0, fmt.Errorf("gpmetis printed no partitioning time:\n%s", out)
	}
	sec, _ := strconv.ParseFloat(string(m[1]), 64)
	pf, err := os.Open(fmt.Sprintf("%s.part.%d", path, k))
	if err != nil {
		return nil, 0, err
	}
	defer pf.Close()
	parts, _, err := ReadAssignment(pf, g.N, k)
	return parts, sec, err
}

// compareML is Multilevel with fields from GRAFT_ML_TRIES, GRAFT_ML_PASSES
// and GRAFT_ML_RECURSIVE, for experiments.
func compareML() Multilevel {
	var ml Multilevel
	ml.Tries, _ = strconv.Atoi(os.Getenv("GRAFT_ML_TRIES"))
	ml.Passes, _ = strconv.Atoi(os.Getenv("GRAFT_ML_PASSES"))
	ml.Carry, _ = strconv.Atoi(os.Getenv("GRAFT_ML_CARRY"))
	if v, err := strconv.Atoi(os.Getenv("GRAFT_ML_BTRIES")); err == nil {
		kwayBisectTries = v
	}
	if v, err := strconv.Atoi(os.Getenv("GRAFT_ML_BCARRY")); err == nil {
		kwayBisectCarried = v
	}
	ml.Recursive = os.Getenv("GRAFT_ML_RECURSIVE") != ""
	return ml
}
