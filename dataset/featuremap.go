package dataset

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/tensor"
)

// Mapping says whether a .npy feature file is mapped into memory or read.
type Mapping int

const (
	// MapAuto maps a float32 or bfloat16 file larger than half the memory
	// available (MapThreshold), and reads any other.
	MapAuto Mapping = iota
	MapNever
	MapAlways
)

// MapThreshold is the share of the memory available above which MapAuto
// maps a feature file.
const MapThreshold = 0.5

// FeatureMap is an N×F .npy feature file of float32 (<f4) or bfloat16
// (<V2) values mapped read-only into memory: its rows are read from the
// page cache as they are used, and the file is never copied whole. The
// mapping advises the kernel that reads are random (no readahead around
// each fault); WillNeed asks for the rows a batch is about to read.
//
// The file's size is checked against its header before it is mapped, so a
// truncated file is refused rather than faulting; a file truncated while
// mapped still would, as with any mapping.
type FeatureMap struct {
	Path       string
	Rows, Cols int
	BF16       bool  // bfloat16 values; else float32
	Bytes      int64 // the data's size
	// Auto is set when MapAuto chose to map the file; Available is then
	// the memory available it was compared with.
	Auto      bool
	Available int64

	data []byte // the whole file, mapped
	off  int64  // where the values start
	x    *tensor.Matrix
	x16  *tensor.MatrixBF16

	// Advice says when WillNeed advises the pages it is told of (it
	// counts them whatever it says).
	Advice Advice

	touched   atomic.Int64 // pages of the rows WillNeed was told of
	advised   atomic.Int64 // calls of WillNeed that advised their pages
	lastReads atomic.Int64 // the process's storage reads at the last call
	scratch   sync.Pool    // *[]int32 for sorting rows
}

// Float32 is the matrix of a float32 file, a view of the mapping; nil for
// a bfloat16 one. It must not be written.
func (m *FeatureMap) Float32() *tensor.Matrix { return m.x }

// BFloat16 is the matrix of a bfloat16 file, a view of the mapping; nil
// for a float32 one. It must not be written.
func (m *FeatureMap) BFloat16() *tensor.MatrixBF16 { return m.x16 }

// Advice says when FeatureMap.WillNeed advises the kernel to read pages.
type Advice int

const (
	// AdviseOnMisses advises a batch's pages when the process has read
	// from storage since the last batch: the page cache is missing some
	// of the file. With the file cached the advice costs a system call
	// per run of pages and gains nothing; with pages missing it issues
	// their reads together instead of one fault at a time.
	AdviseOnMisses Advice = iota
	AdviseAlways
	AdviseNever
)

// ParseAdvice reads "auto" (AdviseOnMisses), "on" or "off".
func ParseAdvice(s string) (Advice, error) {
	switch s {
	case "auto", "":
		return AdviseOnMisses, nil
	case "on":
		return AdviseAlways, nil
	case "off":
		return AdviseNever, nil
	}
	return 0, fmt.Errorf("advice %q: want auto, on or off", s)
}

func (a Advice) String() string {
	return [...]string{"auto", "on", "off"}[a]
}

// AdvisedCalls is the number of WillNeed calls that advised their pages.
func (m *FeatureMap) AdvisedCalls() int64 { return m.advised.Load() }

// TouchedPages is the number of pages holding the rows WillNeed has been
// told of, summed over its calls (a page counts once per call): the
// pages the batches read.
func (m *FeatureMap) TouchedPages() int64 { return m.touched.Load() }

// MapFeatures maps the .npy feature file at path, which must hold n rows
// of float32 or bfloat16 values, after checking its values are finite (a
// read of the file through a small buffer, which adds nothing to the
// process's memory).
func MapFeatures(path string, n int) (*FeatureMap, error) {
	nf, err := checkFeatureNPY(path, n)
	if err != nil {
		return nil, err
	}
	defer nf.Close()
	if err := mappable(nf); err != nil {
		return nil, err
	}
	m := &FeatureMap{Path: path, Rows: n, Cols: nf.h.shape[1], BF16: nf.h.dtype.kind == 'V', Bytes: int64(nf.h.nbytes), off: nf.off}
	if err := checkFiniteFile(nf); err != nil {
		return nil, err
	}
	if m.Bytes > 0 {
		if m.data, err = mapFile(nf.f, nf.off+m.Bytes); err != nil {
			return nil, fmt.Errorf("%s: mapping the features: %w", path, err)
		}
	}
	values := m.data[min(m.off, int64(len(m.data))):]
	if m.BF16 {
		m.x16 = &tensor.MatrixBF16{Rows: m.Rows, Cols: m.Cols, Data: viewAs[uint16](values, m.Rows*m.Cols)}
	} else {
		m.x = &tensor.Matrix{Rows: m.Rows, Cols: m.Cols, Data: viewAs[float32](values, m.Rows*m.Cols)}
	}
	return m, nil
}

// mappable says why an open features .npy cannot be mapped, or nil.
func mappable(nf *npyFile) error {
	dt := nf.h.dtype
	switch {
	case !(dt.kind == 'f' && dt.itemsize == 4) && dt.kind != 'V':
		return fmt.Errorf("%s: dtype %s cannot be mapped: a mapped feature file holds float32 (<f4) or bfloat16 (<V2) values; read it instead (--features-mmap=false)", nf.path, nf.h.descr)
	case binary.NativeEndian.Uint16([]byte{1, 0}) != 1:
		return fmt.Errorf("%s: this machine is big-endian and the file little-endian: it cannot be mapped; read it instead (--features-mmap=false)", nf.path)
	case nf.off%int64(dt.itemsize) != 0:
		return fmt.Errorf("%s: its data starts at byte %d, not a multiple of %d, and cannot be mapped; save it again with numpy, or read it (--features-mmap=false)", nf.path, nf.off, dt.itemsize)
	case !mmapSupported:
		return fmt.Errorf("%s: mapping files is not supported on this system; read it instead (--features-mmap=false)", nf.path)
	}
	return nil
}

// viewAs views the first n elements of b as a []T, sharing its memory.
func viewAs[T float32 | uint16](b []byte, n int) []T {
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// checkFiniteFile reads the values of a features file a chunk at a time
// and reports the first that is not finite.
func checkFiniteFile(nf *npyFile) error {
	cols := max(nf.h.shape[1], 1)
	return nf.readChunks(cols, func(a *Array, first int) error {
		if a.dtype().kind == 'V' {
			for i := range a.Len() {
				if b := binary.LittleEndian.Uint16(a.data[2*i:]); b&0x7f80 == 0x7f80 {
					v, _ := a.Float32s()
					return fmt.Errorf("%s: %w", nf.path, checkFiniteAt(v, cols, first))
				}
			}
			return nil
		}
		v, err := a.Float32s()
		if err != nil {
			return err
		}
		if err := checkFiniteAt(v, cols, first); err != nil {
			return fmt.Errorf("%s: %w", nf.path, err)
		}
		return nil
	})
}

// shouldMap decides whether a features .npy is mapped under mode: with
// MapAuto when it is a mappable file larger than MapThreshold of the
// memory available. It returns the memory available it compared with.
func shouldMap(path string, n int, mode Mapping) (bool, int64, error) {
	switch mode {
	case MapNever:
		return false, 0, nil
	case MapAlways:
		return true, 0, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, 0, err
	}
	avail, ok := availableMemory()
	if !ok || float64(info.Size()) <= MapThreshold*float64(avail) {
		return false, avail, nil
	}
	nf, err := checkFeatureNPY(path, n)
	if err != nil {
		return false, 0, err
	}
	defer nf.Close()
	return mappable(nf) == nil, avail, nil
}

// WillNeed asks the kernel to read ahead the pages holding the given rows,
// which a batch is about to read: the reads of every missing page are then
// issued at once instead of one fault at a time. It may be called from
// several goroutines at once.
func (m *FeatureMap) WillNeed(rows []int32) {
	if len(m.data) == 0 || len(rows) == 0 {
		return
	}
	buf, _ := m.scratch.Get().(*[]int32)
	if buf == nil {
		buf = new([]int32)
	}
	sorted := append((*buf)[:0], rows...)
	slices.Sort(sorted)
	advise := m.shouldAdvise()
	page := int64(os.Getpagesize())
	rowBytes := int64(m.Cols) * int64(m.itemSize())
	var lo, hi, pages int64 = -1, -1, 0 // the run of pages [lo, hi) to advise
	flush := func() {
		if lo >= 0 {
			if advise {
				adviseWillNeed(m.data[lo*page : min(hi*page, int64(len(m.data)))])
			}
			pages += hi - lo
		}
	}
	for _, r := range sorted {
		start := m.off + int64(r)*rowBytes
		p0, p1 := start/page, (start+rowBytes-1)/page+1
		if p0 <= hi {
			hi = max(hi, p1)
			continue
		}
		flush()
		lo, hi = p0, p1
	}
	flush()
	m.touched.Add(pages)
	if advise {
		m.advised.Add(1)
	}
	*buf = sorted
	m.scratch.Put(buf)
}

// shouldAdvise says whether this call of WillNeed advises its pages.
func (m *FeatureMap) shouldAdvise() bool {
	switch m.Advice {
	case AdviseAlways:
		return true
	case AdviseNever:
		return false
	}
	reads, ok := storageReadBytes()
	if !ok {
		return true
	}
	return reads > m.lastReads.Swap(reads)
}

// storageReadBytes is what the process has read from storage (a variable
// for tests).
var storageReadBytes = sysstat.StorageReadBytes

func (m *FeatureMap) itemSize() int {
	if m.BF16 {
		return 2
	}
	return 4
}

// Resident is how many bytes of the mapping the page cache holds (mincore),
// and the mapping's size; ok is false where the system does not say.
func (m *FeatureMap) Resident() (resident, size int64, ok bool) {
	if len(m.data) == 0 {
		return 0, 0, true
	}
	r, ok := residentBytes(m.data)
	return r, int64(len(m.data)), ok
}

// Close unmaps the file: nothing may read its matrices after.
func (m *FeatureMap) Close() error {
	if m.data == nil {
		return nil
	}
	err := unmap(m.data)
	m.data, m.x, m.x16 = nil, nil, nil
	return err
}
