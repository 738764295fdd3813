package compress

import (
	"slices"
	"strings"
	"testing"
)

// A codec joins by registering itself; New and Names then know it, and a
// second registration of the name is a program error.
func TestRegister(t *testing.T) {
	if got := Names(); !slices.Equal(got[:3], []string{"none", "truncate", "subspace"}) || !slices.Contains(got, "topk") {
		t.Fatalf("Names() = %v", got)
	}
	Register("test-none", func() Compressor { return none{} })
	c, err := New("test-none")
	if err != nil || c.Name() != "none" {
		t.Fatalf("New(test-none) = %v, %v", c, err)
	}
	if names := Names(); names[len(names)-1] != "test-none" {
		t.Fatalf("a new codec is not listed last: %v", names)
	}
	if _, err := New("zip"); err == nil || !strings.Contains(err.Error(), "test-none") {
		t.Fatalf("unknown name: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a name twice did not panic")
		}
	}()
	Register("test-none", func() Compressor { return none{} })
}

// Each call of a factory gives an independent value: workers must not
// share a compressor's scratch space.
func TestFactoryMakesFreshValues(t *testing.T) {
	f, err := Factory("topk")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := f(), f(); a == b {
		t.Fatal("two calls returned the same compressor")
	}
	s, err := ScheduleFactory("adaptive:8:1:1:2", 10)
	if err != nil {
		t.Fatal(err)
	}
	a, b := s().(Observer), s()
	a.Observe(0, 1)
	a.Observe(1, 1)
	if a.Ratio(2) == b.Ratio(2) {
		t.Fatal("observing one schedule moved the other")
	}
}
