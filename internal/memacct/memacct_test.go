package memacct

import (
	"sync"
	"testing"
)

// Concurrent growth and release leave the held bytes at their sum, and
// the peak at least the largest amount held at once.
func TestAddTracksHeldAndPeak(t *testing.T) {
	before, beforePeak := Held(Communication), Peak(Communication)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				Add(Communication, 64)
				Add(Communication, -64)
			}
		}()
	}
	wg.Wait()
	if got := Held(Communication); got != before {
		t.Fatalf("held %d after balanced adds, want %d", got, before)
	}
	Add(Communication, 1<<40)
	Grown(Communication, 10, 4, 8) // released 48 bytes
	if got, want := Held(Communication), before+1<<40-48; got != want {
		t.Fatalf("held %d, want %d", got, want)
	}
	if p := Peak(Communication); p < before+1<<40 || p < beforePeak {
		t.Fatalf("peak %d, want at least %d", p, before+1<<40)
	}
	Add(Communication, -(1<<40 - 48))
}

// A mark measures from where the buffers stood: growth after it is its
// peak, whatever was held or reached before.
func TestMarkMeasuresFromItsStart(t *testing.T) {
	Add(Activations, 1000) // an earlier run's buffers, never released
	m := Mark()
	Add(Activations, 300)
	Add(Activations, -200)
	Add(Activations, 50)
	if got := m.Peak(Activations); got != 300 {
		t.Fatalf("peak since the mark %d, want 300", got)
	}
	Add(Activations, -1150)
}
