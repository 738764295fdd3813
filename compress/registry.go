package compress

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

var registry = struct {
	sync.RWMutex
	make     map[string]func() Compressor
	families map[string]family // by the spec's first field
	names    []string          // in the order registered
}{make: map[string]func() Compressor{}, families: map[string]family{}}

// family is a codec with parameters: its specs are NAME or NAME:ARGS.
type family struct {
	parse func(spec string) (func() Compressor, error)
	usage string
}

// RegisterFamily makes codecs with parameters available to New under
// specs name or name:…, which parse reads (errors as values); Names lists
// the family by name, Usage by usage. Registering a name twice panics.
func RegisterFamily(name, usage string, parse func(spec string) (func() Compressor, error)) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.families[name]; dup {
		panic("compress: compressor family " + name + " registered twice")
	}
	if _, dup := registry.make[name]; dup {
		panic("compress: compressor " + name + " registered twice")
	}
	registry.families[name] = family{parse: parse, usage: usage}
	registry.names = append(registry.names, name)
}

// Register makes a compressor available to New (and so to the command
// line) under name; a codec's file registers itself from an init function.
// Registering a name twice panics, as a program error.
func Register(name string, make func() Compressor) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.make[name]; dup {
		panic("compress: compressor " + name + " registered twice")
	}
	if _, dup := registry.families[name]; dup {
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

// Usage is Names with each family's spec form (delta[:BITS…]) in place
// of its name, for help texts.
func Usage() []string {
	registry.RLock()
	defer registry.RUnlock()
	u := slices.Clone(registry.names)
	for i, n := range u {
		if f, ok := registry.families[n]; ok {
			u[i] = f.usage
		}
	}
	return u
}

// Factory returns the constructor of the compressor registered as name,
// or of a family's codec for a spec NAME[:ARGS] (delta:4:0.1:8, say).
// Each worker of a run needs its own value (a compressor keeps scratch
// space), so runs take constructors rather than values.
func Factory(name string) (func() Compressor, error) {
	registry.RLock()
	make, ok := registry.make[name]
	fam, isFamily := registry.families[strings.SplitN(name, ":", 2)[0]]
	registry.RUnlock()
	if isFamily {
		return fam.parse(name)
	}
	if !ok {
		return nil, fmt.Errorf("unknown compressor %q (want one of %s)", name, strings.Join(Usage(), ", "))
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

// KeepsState reports whether spec names a codec that keeps state per
// stream of messages (Caps.Streaming), as delta coding does, entropy-coded
// or not: false for a spec that names no codec.
func KeepsState(spec string) bool {
	make, err := Factory(spec)
	return err == nil && make().Caps().Streaming != nil
}
