//go:build metis

package partition

import "testing"

// TestMETISProperties runs the binding through the same checks as the pure
// Go partitioners and compares its cut with Multilevel's.
func TestMETISProperties(t *testing.T) {
	for _, tg := range shapes(t) {
		_, train := randomMask(tg.g.N, 0.2, 11)
		for _, k := range []int{1, 2, 7, 16} {
			for _, opts := range []Options{{Seed: 1}, {Seed: 2, Balance: train}} {
				p, err := New("metis")
				if err != nil {
					t.Fatal(err)
				}
				parts, err := p.Partition(tg.g, k, opts)
				if err != nil {
					t.Fatalf("%s k=%d: %v", tg.name, k, err)
				}
				if err := CheckAssignment(parts, tg.g.N, k); err != nil {
					t.Fatalf("%s k=%d: %v", tg.name, k, err)
				}
				r, err := Evaluate(tg.g, parts, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want := recountCut(tg.g, parts); r.EdgeCut != want {
					t.Errorf("%s k=%d: cut %d, recount %d", tg.name, k, r.EdgeCut, want)
				}
			}
		}
	}
}

func TestMETISRejectsAsymmetric(t *testing.T) {
	g := undirectedFromPairs(t, 3, [][2]int32{{0, 1}})
	g.Neighbors[0] = 2 // 0→2 without 2→0
	if _, err := (METIS{}).Partition(g, 2, Options{}); err == nil {
		t.Error("METIS accepted an asymmetric graph")
	}
}
