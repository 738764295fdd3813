package partstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

const (
	magic     = "GRAFTPT1"
	maxArrays = 64
)

// array is one named array of a container: exactly one of i32, i64, f32.
type array struct {
	name string
	i32  []int32
	i64  []int64
	f32  []float32
}

const (
	typeInt32   = 1
	typeInt64   = 2
	typeFloat32 = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeArrays(arrays []array) []byte {
	b := append([]byte(magic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[len(magic):], uint32(len(arrays)))
	for _, a := range arrays {
		b = append(b, byte(len(a.name)))
		b = append(b, a.name...)
		switch {
		case a.i64 != nil:
			b = append(b, typeInt64)
			b = binary.LittleEndian.AppendUint64(b, uint64(len(a.i64)))
			for _, v := range a.i64 {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		case a.f32 != nil:
			b = append(b, typeFloat32)
			b = binary.LittleEndian.AppendUint64(b, uint64(len(a.f32)))
			for _, v := range a.f32 {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
		default:
			b = append(b, typeInt32)
			b = binary.LittleEndian.AppendUint64(b, uint64(len(a.i32)))
			for _, v := range a.i32 {
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			}
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeArrays parses a container, checking its checksum and every length.
func decodeArrays(b []byte) (map[string]array, error) {
	if len(b) < len(magic)+8 || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("not a stored part file or truncated (%d bytes)", len(b))
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errors.New("checksum mismatch: the file is corrupt or incomplete")
	}
	n := binary.LittleEndian.Uint32(body[len(magic):])
	if n > maxArrays {
		return nil, fmt.Errorf("%d arrays, at most %d expected", n, maxArrays)
	}
	rest := body[len(magic)+4:]
	out := make(map[string]array, n)
	for range n {
		if len(rest) < 1 || len(rest) < 1+int(rest[0])+9 {
			return nil, errors.New("truncated array header")
		}
		name := string(rest[1 : 1+int(rest[0])])
		rest = rest[1+len(name):]
		typ, count := rest[0], binary.LittleEndian.Uint64(rest[1:9])
		rest = rest[9:]
		size := uint64(4)
		if typ == typeInt64 {
			size = 8
		} else if typ != typeInt32 && typ != typeFloat32 {
			return nil, fmt.Errorf("array %q: unknown type %d", name, typ)
		}
		if count > uint64(len(rest))/size {
			return nil, fmt.Errorf("array %q: %d elements in %d bytes", name, count, len(rest))
		}
		data := rest[:count*size]
		rest = rest[count*size:]
		a := array{name: name}
		switch typ {
		case typeInt32:
			a.i32 = make([]int32, count)
			for i := range a.i32 {
				a.i32[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
			}
		case typeInt64:
			a.i64 = make([]int64, count)
			for i := range a.i64 {
				a.i64[i] = int64(binary.LittleEndian.Uint64(data[8*i:]))
			}
		case typeFloat32:
			a.f32 = make([]float32, count)
			for i := range a.f32 {
				a.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("array %q appears twice", name)
		}
		out[name] = a
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the last array", len(rest))
	}
	return out, nil
}

func ascendingIDs(ids []int32, n int64) error {
	for i, v := range ids {
		if v < 0 || int64(v) >= n {
			return fmt.Errorf("node %d outside [0,%d)", v, n)
		}
		if i > 0 && v <= ids[i-1] {
			return fmt.Errorf("ids not ascending at %d", i)
		}
	}
	return nil
}

// checkOffsets checks that off has n entries, starts at 0, never decreases
// and ends at total.
func checkOffsets(off []int64, n int, total int64) error {
	if len(off) != n {
		return fmt.Errorf("%d offsets, want %d", len(off), n)
	}
	if off[0] != 0 || off[n-1] != total {
		return fmt.Errorf("offsets run from %d to %d, want 0 to %d", off[0], off[n-1], total)
	}
	for i := 1; i < n; i++ {
		if off[i] < off[i-1] {
			return fmt.Errorf("offsets decrease at %d", i)
		}
	}
	return nil
}
