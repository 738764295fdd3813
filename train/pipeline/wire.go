package pipeline

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/tensor"
)

// Sites of the stages' messages: activations go to the next stage,
// gradients of activations to the one before, and the parameters to the
// first stage for evaluation and at the end.
const (
	ActivationSite = "pipeline.activations"
	GradientSite   = "pipeline.gradients"
	ParamSite      = "pipeline.params"
)

// header is what every activation or gradient message starts with: the
// micro-batch it is for (its epoch and its index in the epoch), the
// matrix's shape and, in a gradient, the micro-batch's loss.
type header struct {
	epoch, index, rows, cols int
	loss                     float64
}

const headerBytes = 4*4 + 8

// encode appends h and m's values to b.
func (h header) encode(b []byte, m *tensor.Matrix) []byte {
	for _, v := range []int{h.epoch, h.index, m.Rows, m.Cols} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.loss))
	return compress.AppendFloats(b, m.Data)
}

// decode reads a message into m, reusing its storage.
func decode(b []byte, m *tensor.Matrix) (header, error) {
	if len(b) < headerBytes {
		return header{}, fmt.Errorf("pipeline: malformed %d-byte message", len(b))
	}
	u := func(i int) int { return int(binary.LittleEndian.Uint32(b[4*i:])) }
	h := header{epoch: u(0), index: u(1), rows: u(2), cols: u(3), loss: math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))}
	if n := len(b) - headerBytes; n%4 != 0 || n/4 != h.rows*h.cols {
		return header{}, fmt.Errorf("pipeline: a %d×%d matrix in %d bytes", h.rows, h.cols, n)
	}
	m.Rows, m.Cols = h.rows, h.cols
	m.Data = compress.ReadFloats(m.Data[:0], b[headerBytes:])
	return h, nil
}
