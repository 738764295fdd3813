package vec

import "github.com/graft-gnn/graft/internal/cpuid"

// kernels is one implementation of every primitive. Length checks happen in
// the exported wrappers, so implementations may assume equal lengths.
type kernels struct {
	level        cpuid.Level
	axpy         func(alpha float32, x, y []float32)
	scale        func(alpha float32, x []float32)
	add          func(dst, a, b []float32)
	sub          func(dst, a, b []float32)
	mul          func(dst, a, b []float32)
	dot          func(x, y []float32) float32
	sum          func(x []float32) float32
	triad        func(a, b, c []float32, s float32)
	relu         func(dst, x []float32)
	reluBackward func(dst, dy, y []float32)
	signBits     func(bits []uint64, x []float32)
	keepByBits   func(x []float32, bits []uint64, scale float32)
}

var generic = kernels{
	level:        cpuid.Generic,
	axpy:         axpyGeneric,
	scale:        scaleGeneric,
	add:          addGeneric,
	sub:          subGeneric,
	mul:          mulGeneric,
	dot:          dotGeneric,
	sum:          sumGeneric,
	triad:        triadGeneric,
	relu:         reluGeneric,
	reluBackward: reluBackwardGeneric,
	signBits:     signBitsGeneric,
	keepByBits:   keepByBitsGeneric,
}

// impl is the implementation in use, the widest this CPU and build support.
var impl = kernelsFor(cpuid.Detected)

// Kernel names the implementation in use: "avx512", "avx2" or "generic".
func Kernel() string { return impl.level.String() }

func checkLen(op string, n int, others ...int) {
	for _, m := range others {
		if m != n {
			panic("vec: " + op + ": slice lengths differ")
		}
	}
}

// Axpy computes y[i] += alpha*x[i].
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		checkLen("Axpy", len(x), len(y))
	}
	impl.axpy(alpha, x, y)
}

// Scale computes x[i] *= alpha.
func Scale(alpha float32, x []float32) { impl.scale(alpha, x) }

// Add computes dst[i] = a[i] + b[i]. dst may alias a or b.
func Add(dst, a, b []float32) {
	if len(a) != len(dst) || len(b) != len(dst) {
		checkLen("Add", len(dst), len(a), len(b))
	}
	impl.add(dst, a, b)
}

// Sub computes dst[i] = a[i] - b[i]. dst may alias a or b.
func Sub(dst, a, b []float32) {
	if len(a) != len(dst) || len(b) != len(dst) {
		checkLen("Sub", len(dst), len(a), len(b))
	}
	impl.sub(dst, a, b)
}

// Mul computes the element-wise product dst[i] = a[i] * b[i]. dst may alias a or b.
func Mul(dst, a, b []float32) {
	if len(a) != len(dst) || len(b) != len(dst) {
		checkLen("Mul", len(dst), len(a), len(b))
	}
	impl.mul(dst, a, b)
}

// Dot returns Σ x[i]*y[i].
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		checkLen("Dot", len(x), len(y))
	}
	return impl.dot(x, y)
}

// Sum returns Σ x[i].
func Sum(x []float32) float32 { return impl.sum(x) }

// Triad computes a[i] = b[i] + s*c[i], the STREAM triad.
func Triad(a, b, c []float32, s float32) {
	if len(b) != len(a) || len(c) != len(a) {
		checkLen("Triad", len(a), len(b), len(c))
	}
	impl.triad(a, b, c, s)
}

// ReLU computes dst[i] = max(x[i], 0); NaN maps to 0. dst may alias x.
func ReLU(dst, x []float32) {
	if len(x) != len(dst) {
		checkLen("ReLU", len(dst), len(x))
	}
	impl.relu(dst, x)
}

// ReLUBackward computes dst[i] = dy[i] where y[i] > 0 and 0 elsewhere, the
// gradient of ReLU given its output y. dst may alias dy or y.
func ReLUBackward(dst, dy, y []float32) {
	if len(dy) != len(dst) || len(y) != len(dst) {
		checkLen("ReLUBackward", len(dst), len(dy), len(y))
	}
	impl.reluBackward(dst, dy, y)
}
