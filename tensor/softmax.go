package tensor

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/internal/freelist"
	"github.com/graft-gnn/graft/internal/parallel"
)

type softmaxTask struct {
	dst, x *Matrix
	rows   []int32 // nil for every row
	log    bool
}

func (t *softmaxTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		r := i
		if t.rows != nil {
			r = int(t.rows[i])
		}
		softmaxRow(t.dst.Row(r), t.x.Row(r), t.log)
	}
}

// softmaxRow subtracts the row maximum first so exp never overflows, and
// accumulates the normaliser in float64.
func softmaxRow(dst, x []float32, log bool) {
	if len(x) == 0 {
		return
	}
	mx := x[0]
	for _, v := range x[1:] {
		if v > mx {
			mx = v
		}
	}
	var z float64
	for _, v := range x {
		z += math.Exp(float64(v - mx))
	}
	if log {
		lz := float32(math.Log(z)) + mx
		for j, v := range x {
			dst[j] = v - lz
		}
		return
	}
	inv := 1 / z
	for j, v := range x {
		dst[j] = float32(math.Exp(float64(v-mx)) * inv)
	}
}

var softmaxTasks freelist.List[softmaxTask]

func rowwise(dst, x *Matrix, rows []int32, log bool) {
	mustSameShape("Softmax", dst, x)
	n := x.Rows
	if rows != nil {
		n = len(rows)
	}
	t := softmaxTasks.Get()
	*t = softmaxTask{dst: dst, x: x, rows: rows, log: log}
	parallel.For(n, max(1, 4096/max(1, x.Cols)), t)
	*t = softmaxTask{}
	softmaxTasks.Put(t)
}

// Softmax sets each row of dst to the softmax of the same row of x.
func Softmax(dst, x *Matrix) { rowwise(dst, x, nil, false) }

// LogSoftmax sets each row of dst to the log-softmax of the same row of x.
func LogSoftmax(dst, x *Matrix) { rowwise(dst, x, nil, true) }

// LogSoftmaxRows sets the listed rows of dst to the log-softmax of the same
// rows of x and leaves the others as they are: a loss over a few labelled
// rows need not pay for every row. The rows must be distinct (they are
// computed in parallel).
func LogSoftmaxRows(dst, x *Matrix, rows []int32) {
	mustSameShape("Softmax", dst, x)
	for _, r := range rows {
		if r < 0 || int(r) >= x.Rows {
			panic(fmt.Sprintf("tensor: LogSoftmaxRows: row %d of %d", r, x.Rows))
		}
	}
	if len(rows) > 0 {
		rowwise(dst, x, rows, true)
	}
}
