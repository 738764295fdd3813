package compress

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

var registry = struct {
	sync.RWMutex
	make  map[string]func() Compressor
	names []string // in the order registered
}{make: map[string]func() Compressor{}}

// Register makes a compressor available to New (and so to the command
// line) under name; a codec's file registers itself from an init function.
// Registering a name twice panics, as a program error.
func Register(name string, make func() Compressor) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.make[name]; dup {
		panic("compress: compressor " + name + " registered twice")
	}
	registry.make[name] = make
	registry.names = append(registry.names, name)
}

// Names lists the registered compressors in the order they registered:
// graft's own in the order of their files (none, the column selectors,
// the quantisers, top-k), then any a program adds.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.names)
}

// Factory returns the constructor of the compressor registered as name.
// Each worker of a run needs its own value (a compressor keeps scratch
// space), so runs take constructors rather than values.
func Factory(name string) (func() Compressor, error) {
	registry.RLock()
	make, ok := registry.make[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown compressor %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return make, nil
}

// New returns a new compressor by its registered name.
func New(name string) (Compressor, error) {
	make, err := Factory(name)
	if err != nil {
		return nil, err
	}
	return make(), nil
}
