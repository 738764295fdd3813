package dataset

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteNPYFloat32 writes a C-ordered float32 array of the given shape in
// NumPy's .npy format (version 1.0), which numpy.load reads.
func WriteNPYFloat32(w io.Writer, shape []int, data []float32) error {
	header, err := npyHeaderBytes("<f4", shape)
	if err != nil {
		return err
	}
	if n := shapeLen(shape); n != len(data) {
		return fmt.Errorf("npy: %d values for shape %v", len(data), shape)
	}
	buf := make([]byte, 0, len(header)+4*len(data))
	buf = append(buf, header...)
	for _, v := range data {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	_, err = w.Write(buf)
	return err
}

func shapeLen(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// npyHeaderBytes is the .npy (version 1.0) header of a C-ordered array of
// dtype descr and the given shape: magic, version, length and the dict,
// padded so that the data starts at a multiple of 64 bytes (aligned for
// any element, and for mapping the file).
func npyHeaderBytes(descr string, shape []int) ([]byte, error) {
	dims := make([]string, len(shape))
	for i, s := range shape {
		if s < 0 {
			return nil, fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
		dims[i] = fmt.Sprint(s)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	pad := 63 - (len(npyMagic)+4+len(dict))%64
	header := dict + strings.Repeat(" ", pad) + "\n"
	if len(header) > math.MaxUint16 {
		return nil, fmt.Errorf("npy: shape %v makes too long a header", shape)
	}
	buf := make([]byte, 0, len(npyMagic)+4+len(header))
	buf = append(buf, npyMagic...)
	buf = append(buf, 1, 0)
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(header)))
	return append(buf, header...), nil
}

// writeNPYInts writes a 1-D array of int32 ("<i4") or int64 ("<i8")
// values through a buffer, never a copy of them all.
func writeNPYInts[T int32 | int64](w io.Writer, v []T) error {
	var zero T
	size := binary.Size(zero)
	header, err := npyHeaderBytes(fmt.Sprintf("<i%d", size), []int{len(v)})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.Write(header)
	var b [8]byte
	for _, x := range v {
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		bw.Write(b[:size])
	}
	return bw.Flush()
}
