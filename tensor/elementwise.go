package tensor

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/internal/freelist"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
)

// Element-wise operations on large matrices are memory-bound; they are split
// across cores once they are big enough to amortise the hand-off.
const parallelMinLen = 1 << 16

type vecOp int

const (
	opAdd vecOp = iota
	opSub
	opMul
	opAxpy
	opScale
	opReLU
	opReLUBackward
)

type vecTask struct {
	op        vecOp
	dst, a, b []float32
	alpha     float32
}

func (t *vecTask) Run(lo, hi int) {
	dst := t.dst[lo:hi]
	switch t.op {
	case opAdd:
		vec.Add(dst, t.a[lo:hi], t.b[lo:hi])
	case opSub:
		vec.Sub(dst, t.a[lo:hi], t.b[lo:hi])
	case opMul:
		vec.Mul(dst, t.a[lo:hi], t.b[lo:hi])
	case opAxpy:
		vec.Axpy(t.alpha, t.a[lo:hi], dst)
	case opScale:
		vec.Scale(t.alpha, dst)
	case opReLU:
		vec.ReLU(dst, t.a[lo:hi])
	case opReLUBackward:
		vec.ReLUBackward(dst, t.a[lo:hi], t.b[lo:hi])
	}
}

var vecTasks freelist.List[vecTask]

func runVec(op vecOp, dst, a, b []float32, alpha float32) {
	t := vecTasks.Get()
	*t = vecTask{op: op, dst: dst, a: a, b: b, alpha: alpha}
	if len(dst) < parallelMinLen {
		t.Run(0, len(dst))
	} else {
		parallel.For(len(dst), parallelMinLen/4, t)
	}
	*t = vecTask{}
	vecTasks.Put(t)
}

func mustSameShape(op string, ms ...*Matrix) {
	for _, m := range ms[1:] {
		if !m.SameShape(ms[0]) {
			panic(fmt.Sprintf("tensor: %s: shapes %s and %s differ", op, ms[0].Shape(), m.Shape()))
		}
	}
}

// Add sets dst = a + b.
func Add(dst, a, b *Matrix) {
	mustSameShape("Add", dst, a, b)
	runVec(opAdd, dst.Data, a.Data, b.Data, 0)
}

// Sub sets dst = a − b.
func Sub(dst, a, b *Matrix) {
	mustSameShape("Sub", dst, a, b)
	runVec(opSub, dst.Data, a.Data, b.Data, 0)
}

// Mul sets dst = a ⊙ b (element-wise).
func Mul(dst, a, b *Matrix) {
	mustSameShape("Mul", dst, a, b)
	runVec(opMul, dst.Data, a.Data, b.Data, 0)
}

// AddScaled sets dst += alpha·x.
func AddScaled(dst *Matrix, alpha float32, x *Matrix) {
	mustSameShape("AddScaled", dst, x)
	runVec(opAxpy, dst.Data, x.Data, nil, alpha)
}

// Scale sets m *= alpha.
func Scale(m *Matrix, alpha float32) { runVec(opScale, m.Data, nil, nil, alpha) }

// ReLU sets dst = max(x, 0).
func ReLU(dst, x *Matrix) { mustSameShape("ReLU", dst, x); runVec(opReLU, dst.Data, x.Data, nil, 0) }

// ReLUBackward sets dx = dy where y > 0, else 0; y is the ReLU's output.
func ReLUBackward(dx, dy, y *Matrix) {
	mustSameShape("ReLUBackward", dx, dy, y)
	runVec(opReLUBackward, dx.Data, dy.Data, y.Data, 0)
}

// LeakyReLU sets dst = x for x > 0, slope·x otherwise.
func LeakyReLU(dst, x *Matrix, slope float32) {
	mustSameShape("LeakyReLU", dst, x)
	for i, v := range x.Data {
		if v < 0 {
			v *= slope
		}
		dst.Data[i] = v
	}
}

// LeakyReLUBackward sets dx = dy·(x > 0 ? 1 : slope), with x the input.
func LeakyReLUBackward(dx, dy, x *Matrix, slope float32) {
	mustSameShape("LeakyReLUBackward", dx, dy, x)
	for i, v := range x.Data {
		g := dy.Data[i]
		if v <= 0 {
			g *= slope
		}
		dx.Data[i] = g
	}
}

// ELU sets dst = x for x > 0, alpha·(eˣ − 1) otherwise.
func ELU(dst, x *Matrix, alpha float32) {
	mustSameShape("ELU", dst, x)
	for i, v := range x.Data {
		if v <= 0 {
			v = alpha * float32(math.Expm1(float64(v)))
		}
		dst.Data[i] = v
	}
}

// ELUBackward sets dx = dy·ELU'(x) from the input x and output y
// (for x ≤ 0, ELU'(x) = y + alpha).
func ELUBackward(dx, dy, x, y *Matrix, alpha float32) {
	mustSameShape("ELUBackward", dx, dy, x, y)
	for i, v := range x.Data {
		g := dy.Data[i]
		if v <= 0 {
			g *= y.Data[i] + alpha
		}
		dx.Data[i] = g
	}
}

// AddRowVector adds v to every row of m (a bias).
func AddRowVector(m *Matrix, v []float32) {
	if len(v) != m.Cols {
		panic(fmt.Sprintf("tensor: AddRowVector: %d values for %d columns", len(v), m.Cols))
	}
	for i := 0; i < m.Rows; i++ {
		vec.Add(m.Row(i), m.Row(i), v)
	}
}

// SumRows adds the rows of m into dst (len m.Cols): the gradient of a bias.
func SumRows(dst []float32, m *Matrix) {
	if len(dst) != m.Cols {
		panic(fmt.Sprintf("tensor: SumRows: %d outputs for %d columns", len(dst), m.Cols))
	}
	for i := 0; i < m.Rows; i++ {
		vec.Add(dst, dst, m.Row(i))
	}
}

// Dot returns Σ a⊙b.
func Dot(a, b *Matrix) float32 { mustSameShape("Dot", a, b); return vec.Dot(a.Data, b.Data) }

// Sum returns the sum of all elements.
func Sum(m *Matrix) float32 { return vec.Sum(m.Data) }

// ArgmaxRows writes the column of each row's largest element into dst.
func ArgmaxRows(dst []int32, m *Matrix) {
	for i := 0; i < m.Rows; i++ {
		dst[i] = int32(Argmax(m.Row(i)))
	}
}

// Argmax is the index of x's largest element, the first on ties (0 for an
// empty x): the class a row of logits predicts.
func Argmax(x []float32) int {
	best := 0
	for j, v := range x {
		if v > x[best] {
			best = j
		}
	}
	return best
}
