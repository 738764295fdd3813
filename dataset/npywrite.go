package dataset

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteNPYFloat32 writes a C-ordered float32 array of the given shape in
// NumPy's .npy format (version 1.0), which numpy.load reads.
func WriteNPYFloat32(w io.Writer, shape []int, data []float32) error {
	n := 1
	dims := make([]string, len(shape))
	for i, s := range shape {
		if s < 0 {
			return fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
		n *= s
		dims[i] = fmt.Sprint(s)
	}
	if n != len(data) {
		return fmt.Errorf("npy: %d values for shape %v", len(data), shape)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", tuple)
	// The header (magic, version, length, dict, padding, newline) is a
	// multiple of 64 bytes so the data is aligned.
	pad := 63 - (len(npyMagic)+4+len(dict))%64
	header := dict + strings.Repeat(" ", pad) + "\n"
	if len(header) > math.MaxUint16 {
		return fmt.Errorf("npy: shape %v makes too long a header", shape)
	}
	buf := make([]byte, 0, len(npyMagic)+4+len(header)+4*len(data))
	buf = append(buf, npyMagic...)
	buf = append(buf, 1, 0)
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(header)))
	buf = append(buf, header...)
	for _, v := range data {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	_, err := w.Write(buf)
	return err
}
