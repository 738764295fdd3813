package dataset

// DegreeStats summarises the node degrees of a dataset's (undirected) graph.
type DegreeStats struct {
	Min      int     `json:"min"`
	Mean     float64 `json:"mean"`
	Median   float64 `json:"median"`
	Max      int     `json:"max"`
	Isolated int     `json:"isolated"` // nodes with no neighbour
}

// Degrees computes the degree statistics of d.Graph.
func (d *Dataset) Degrees() DegreeStats {
	g := d.Graph
	if g.N == 0 {
		return DegreeStats{}
	}
	// Degrees are below N, so a counting pass finds the median without a sort.
	counts := make([]int, g.N)
	s := DegreeStats{Min: g.N}
	for v := 0; v < g.N; v++ {
		k := g.Degree(v)
		counts[k]++
		s.Min = min(s.Min, k)
		s.Max = max(s.Max, k)
		if k == 0 {
			s.Isolated++
		}
	}
	s.Mean = float64(g.NumEdges()) / float64(g.N)
	s.Median = (float64(kth(counts, (g.N-1)/2)) + float64(kth(counts, g.N/2))) / 2
	return s
}

// kth returns the k-th smallest value (0-based) given a histogram.
func kth(counts []int, k int) int {
	for v, c := range counts {
		if k < c {
			return v
		}
		k -= c
	}
	return len(counts) - 1
}
