package dataset

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/graft-gnn/graft/internal/hugepage"
)

// npyFile is an open .npy file whose header has been read and checked
// against the file's size: its data is known to be all there.
type npyFile struct {
	path string
	f    *os.File
	h    npyHeader
	off  int64 // where the data starts
	size int64 // the file's size
}

// openNPY opens a .npy file and reads its header. A file shorter than its
// header says is refused here, before anything reads or maps its data.
func openNPY(path string) (*npyFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h, err := readNPYHeader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		var info os.FileInfo
		if info, err = f.Stat(); err == nil {
			nf := &npyFile{path: path, f: f, h: h, off: off, size: info.Size()}
			if have := nf.size - off; have < int64(h.nbytes) {
				f.Close()
				return nil, fmt.Errorf("%s: truncated: shape %v of %s needs %d data bytes, file has %d", path, h.shape, h.descr, h.nbytes, have)
			}
			return nf, nil
		}
	}
	f.Close()
	return nil, fmt.Errorf("%s: %w", path, err)
}

func (nf *npyFile) Close() error { return nf.f.Close() }

// elements is the number of values the header describes.
func (nf *npyFile) elements() int { return nf.h.nbytes / nf.h.dtype.itemsize }

// npyChunk is how many bytes readChunks reads at a time.
const npyChunk = 4 << 20

// readChunks reads the data in chunks of whole elements (a multiple of
// align elements, such as a row), calling each with the chunk as an
// Array and the index of its first element.
func (nf *npyFile) readChunks(align int, each func(a *Array, first int) error) error {
	item := nf.h.dtype.itemsize
	per := max(1, npyChunk/(item*max(align, 1))) * max(align, 1)
	buf := make([]byte, per*item)
	total := nf.elements()
	for first := 0; first < total; first += per {
		k := min(per, total-first)
		b := buf[:k*item]
		if _, err := io.ReadFull(nf.f, b); err != nil {
			return fmt.Errorf("%s: reading element %d: %w", nf.path, first, noEOF(err))
		}
		a := &Array{Name: nf.path, DType: nf.h.descr, Shape: []int{k}, data: b, loaded: true}
		if err := each(a, first); err != nil {
			return err
		}
	}
	return nil
}

// readNPYInt64s reads a 1-D integer .npy array a chunk at a time.
func readNPYInt64s(path string) ([]int64, error) {
	return readNPYInts(path, func(dst []int64, v []int64, _ int) error {
		copy(dst, v)
		return nil
	})
}

// readNPYInt32s reads a 1-D integer .npy array whose values fit in int32
// a chunk at a time, so that the file's bytes and a wider copy are never
// held beside the result.
func readNPYInt32s(path string) ([]int32, error) {
	return readNPYInts(path, func(dst []int32, v []int64, first int) error {
		for i, x := range v {
			if x < math.MinInt32 || x > math.MaxInt32 {
				return fmt.Errorf("%s: element %d = %d does not fit in int32", path, first+i, x)
			}
			dst[i] = int32(x)
		}
		return nil
	})
}

// readNPYInts reads a 1-D integer .npy array a chunk at a time, each
// chunk's values widened to int64 and stored by put into the result's rows
// from first on.
func readNPYInts[T int32 | int64](path string, put func(dst []T, v []int64, first int) error) ([]T, error) {
	nf, err := openNPY(path)
	if err != nil {
		return nil, err
	}
	defer nf.Close()
	if len(nf.h.shape) != 1 {
		return nil, fmt.Errorf("%s: shape %s, want a 1-D array", path, tuple(nf.h.shape))
	}
	out := make([]T, nf.elements())
	err = nf.readChunks(1, func(a *Array, first int) error {
		v, err := a.Int64s()
		if err != nil {
			return err
		}
		return put(out[first:], v, first)
	})
	return out, err
}

// checkFeatureNPY opens a features .npy and checks that it is an n×F
// numeric array.
func checkFeatureNPY(path string, n int) (*npyFile, error) {
	nf, err := openNPY(path)
	if err != nil {
		return nil, err
	}
	if len(nf.h.shape) != 2 || nf.h.shape[0] != n {
		nf.Close()
		return nil, rowsError{fmt.Errorf("%s: features have shape %s, want (%d, F): one row per node", path, tuple(nf.h.shape), n)}
	}
	if nf.h.shape[1] == 0 {
		nf.Close()
		return nil, fmt.Errorf("%s: features have shape %s: no columns; want at least one", path, tuple(nf.h.shape))
	}
	switch nf.h.dtype.kind {
	case 'f', 'i', 'u', 'b', 'V':
		return nf, nil
	}
	nf.Close()
	return nil, fmt.Errorf("%s: dtype %s is not numeric", path, nf.h.descr)
}

// readNPYFeatures reads an n×F .npy feature matrix as float32 a chunk of
// rows at a time, checking that every value is finite.
func readNPYFeatures(path string, n int) ([]float32, int, error) {
	nf, err := checkFeatureNPY(path, n)
	if err != nil {
		return nil, 0, err
	}
	defer nf.Close()
	cols := nf.h.shape[1]
	need := 4 * int64(n) * int64(cols)
	if avail, ok := availableMemory(); ok && need > avail {
		how := "map the file instead (--features-mmap)"
		if mappable(nf) != nil { // --features-mmap would refuse it
			how = fmt.Sprintf("a %s file cannot be mapped: save it as bfloat16 (ml_dtypes.bfloat16) or float32 and map that (--features-mmap)", nf.h.descr)
		}
		return nil, 0, fmt.Errorf("%s: its features take %s as float32, more than the %s of memory available; %s", path, byteSize(need), byteSize(avail), how)
	}
	out := hugepage.Float32s(n * cols)
	err = nf.readChunks(max(cols, 1), func(a *Array, first int) error {
		v, err := a.Float32s()
		if err != nil {
			return err
		}
		if err := checkFiniteAt(v, cols, first); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		copy(out[first:], v)
		return nil
	})
	return out, cols, err
}
