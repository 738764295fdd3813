package freelist

import (
	"runtime"
	"testing"
)

func TestReuseSurvivesGC(t *testing.T) {
	var l List[[64]byte]
	x := l.Get()
	l.Put(x)
	runtime.GC()
	runtime.GC()
	if y := l.Get(); y != x {
		t.Fatal("the kept value was lost across garbage collections")
	}
	if allocs := testing.AllocsPerRun(100, func() { l.Put(l.Get()) }); allocs != 0 {
		t.Fatalf("Get/Put allocated %.1f times", allocs)
	}
}

func TestBounded(t *testing.T) {
	var l List[int]
	for range 2 * maxFree {
		l.Put(new(int))
	}
	if len(l.free) != maxFree {
		t.Fatalf("kept %d values, want at most %d", len(l.free), maxFree)
	}
}
