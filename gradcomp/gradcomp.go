package gradcomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/graft-gnn/graft/comm"
)

// Shape is one parameter's matrix shape in the packed gradient buffer.
type Shape struct{ Rows, Cols int }

// Size is the number of values of the parameter.
func (s Shape) Size() int { return s.Rows * s.Cols }

// Tensor is one named part of a method's state.
type Tensor struct {
	Name string
	Data []float32
}

// Method sums the workers' gradients, compressed. Each worker needs its
// own value: a method keeps per-worker state.
type Method interface {
	// String is the method's spec, as New parsed it.
	String() string
	// Init is given the packed gradient's layout before the first Reduce,
	// and the number of workers.
	Init(shapes []Shape, workers int) error
	// Reduce replaces g, this worker's packed gradient, with the
	// (approximate) sum over the workers of c, the same bits on every
	// worker, and counts its traffic under site. Every worker calls it
	// with the same length.
	Reduce(c comm.Communicator, site string, g []float32) error
	// State is the worker's state that a resumed run needs (residuals,
	// warm-start factors), in a fixed order; Restore takes back what State
	// returned (the same names and lengths). A method without state
	// returns nil.
	State() []Tensor
	Restore(state []Tensor) error
}

// Options are the settings of a method beyond its spec.
type Options struct {
	// Seed fixes the random start of PowerSGD's factors (the same on every
	// worker).
	Seed uint64
	// Momentum, when positive, makes top-k with error feedback accumulate
	// momentum locally before selecting (Deep Gradient Compression's
	// momentum correction): the optimiser must then step without momentum
	// of its own (see MomentumOf). Other methods ignore it.
	Momentum float64
}

// MomentumOf is the momentum m accumulates in place of the optimiser's, 0
// for none.
func MomentumOf(m Method) float64 {
	if mc, ok := m.(interface{ Momentum() float64 }); ok {
		return mc.Momentum()
	}
	return 0
}

// IsDelayed reports whether m delivers most coordinates' gradients late,
// several steps' in one sum, and none in between (top-k with error
// feedback): the optimiser should then step a coordinate when its
// gradient arrives, taking the steps it missed (nn.OptimizerConfig's
// CatchUp). Dense methods deliver every coordinate at every step.
func IsDelayed(m Method) bool {
	d, ok := m.(interface{ DelaysGradients() bool })
	return ok && d.DelaysGradients()
}

// Flags are the options a spec names after commas.
type Flags struct {
	// Feedback is error feedback: on unless the spec says ",noef".
	Feedback bool
	// Scaled (",scaled", top-k's) ranks each coordinate by its magnitude
	// over the root mean square of the worker's recent gradients there.
	Scaled bool
	// Warmup (",warmup:EPOCHS") is the number of first epochs summed
	// exactly; New applies it to every lossy method.
	Warmup int
}

// Maker builds a method from the argument after the name's colon ("" if
// none) and the spec's flags. A method refuses a flag it does not take.
type Maker func(arg string, f Flags, o Options) (Method, error)

var registry = struct {
	sync.RWMutex
	make  map[string]Maker
	names []string
}{make: map[string]Maker{}}

// Register makes a method available to New under name. Registering a name
// twice panics, as a program error.
func Register(name string, make Maker) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.make[name]; dup {
		panic("gradcomp: method " + name + " registered twice")
	}
	registry.make[name] = make
	registry.names = append(registry.names, name)
}

// Names lists the registered methods in the order they registered.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.names)
}

// Usage is the forms New accepts, for help texts.
const Usage = "none, topk:FRACTION, powersgd:RANK, quant8 or quant4; add ,noef to turn error feedback off, ,warmup:EPOCHS to sum exactly for the first EPOCHS epochs and, for top-k, ,scaled to rank coordinates by their gradients' scale"

// New returns the method of spec: a name, ":ARG" where the method takes
// one, then any of the options ",noef" (error feedback off) and ",scaled"
// (top-k's scaled ranking) and ",warmup:EPOCHS" (exact sums for the
// first EPOCHS epochs), each at most once.
func New(spec string, o Options) (Method, error) {
	body, opts, hasOpts := strings.Cut(spec, ",")
	f := Flags{Feedback: true}
	seen := map[string]bool{}
	for opt := range strings.SplitSeq(opts, ",") {
		if !hasOpts {
			break
		}
		switch {
		case seen[opt]:
			return nil, fmt.Errorf("gradient compression %q: option %q twice", spec, opt)
		case strings.HasPrefix(opt, "warmup:"):
			n, err := strconv.Atoi(opt[len("warmup:"):])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("gradient compression %q: warmup:EPOCHS needs a number of epochs, 0 or more, not %q", spec, opt[len("warmup:"):])
			}
			if seen["warmup"] {
				return nil, fmt.Errorf("gradient compression %q: option warmup twice", spec)
			}
			seen["warmup"] = true
			f.Warmup = n
			continue
		case opt == "noef":
			f.Feedback = false
		case opt == "scaled":
			f.Scaled = true
		default:
			return nil, fmt.Errorf("gradient compression %q: unknown option %q (want noef, scaled or warmup:EPOCHS)", spec, opt)
		}
		seen[opt] = true
	}
	name, arg, _ := strings.Cut(body, ":")
	registry.RLock()
	make, ok := registry.make[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("gradient compression %q: unknown method %q (want %s)", spec, name, Usage)
	}
	m, err := make(arg, f, o)
	if err != nil {
		return nil, fmt.Errorf("gradient compression %q: %v", spec, err)
	}
	if f.Warmup > 0 {
		if _, exact := m.(none); exact {
			return nil, fmt.Errorf("gradient compression %q: none is exact throughout, it has no warm-up", spec)
		}
		m = newWarmup(m, f.Warmup)
	}
	return m, nil
}

// Check reports whether spec is one New accepts.
func Check(spec string) error {
	_, err := New(spec, Options{})
	return err
}

// paramSize is the number of parameter values of shapes.
func paramSize(shapes []Shape) int {
	n := 0
	for _, s := range shapes {
		n += s.Size()
	}
	return n
}

// checkLen refuses a buffer shorter than the layout (Reduce before Init).
func checkLen(name string, n, params int) error {
	if n < params {
		return fmt.Errorf("gradcomp: %s: a %d-value buffer for %d parameter values (Init first, with the buffer's layout)", name, n, params)
	}
	return nil
}

// allGather sends msg to every peer and returns every worker's message by
// rank (recv reused), checking that they have the length want.
func allGather(c comm.Communicator, site string, msg []byte, send, recv [][]byte, want int) error {
	for p := range send {
		send[p] = msg
	}
	if err := c.AllToAll(site, send, recv); err != nil {
		return err
	}
	for p, b := range recv {
		if len(b) != want {
			return fmt.Errorf("gradcomp: rank %d sent %d bytes, want %d", p, len(b), want)
		}
	}
	return nil
}

// addFloats adds the little-endian float32s of b to x.
func addFloats(x []float32, b []byte) {
	for i := range x {
		x[i] += math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// restoreInto copies state into the method's tensors, checking names and
// lengths.
func restoreInto(mine []Tensor, state []Tensor) error {
	if len(state) != len(mine) {
		return fmt.Errorf("gradcomp: %d state tensors, want %d", len(state), len(mine))
	}
	for i, t := range mine {
		if state[i].Name != t.Name || len(state[i].Data) != len(t.Data) {
			return fmt.Errorf("gradcomp: state tensor %q of %d values, want %q of %d", state[i].Name, len(state[i].Data), t.Name, len(t.Data))
		}
		copy(t.Data, state[i].Data)
	}
	return nil
}

var (
	errNoArg    = errors.New("takes no argument")
	errNoScaled = errors.New("only top-k takes ,scaled")
)
