package dataset

import (
	"testing"
)

func TestDegrees(t *testing.T) {
	tests := []struct {
		name  string
		edges string
		n     int
		want  DegreeStats
	}{
		// Star centred on 0 plus an isolated node 4: degrees 3,1,1,1,0.
		{"star", "0 1\n0 2\n0 3\n", 5, DegreeStats{Min: 0, Mean: 6.0 / 5, Median: 1, Max: 3, Isolated: 1}},
		// Path 0-1-2-3: degrees 1,2,2,1; even count averages the middle two.
		{"path", "0 1\n1 2\n2 3\n", 0, DegreeStats{Min: 1, Mean: 1.5, Median: 1.5, Max: 2}},
		{"no edges", "# none\n", 3, DegreeStats{Isolated: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "g.txt", []byte(tc.edges))
			d, err := loadEdgeListDataset("g", p, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Degrees(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
