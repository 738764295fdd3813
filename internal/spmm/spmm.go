package spmm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/graft-gnn/graft/internal/cpuid"
	"github.com/graft-gnn/graft/internal/freelist"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
)

// rowKernel computes rows [0, len(offsets)-1) of y = A·x, where row r's
// entries are positions [offsets[r], offsets[r+1]) of indices and values and
// y starts at the first row of the range. Inputs are validated beforehand.
type rowKernel func(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)

// scatterKernel adds val·x[i, :width] to y[indices[p], :width] for every entry
// p of every row i in [0, len(offsets)-1). Inputs are validated beforehand.
type scatterKernel func(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int)

// rowKernelBF16 is rowKernel with x in bfloat16 (uint16 bit patterns).
type rowKernelBF16 func(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)

// kernelSet holds one instruction set's kernels. rows[far][stream] and
// rowsBF16[far][stream] are the row kernels: far for gathers from a matrix
// larger than farGatherBytes, used where farPays; stream for outputs
// larger than streamOutputBytes, written with non-temporal stores (see
// streamStores). A set without such variants repeats its plain kernel;
// all the variants' results are the same bits.
type kernelSet struct {
	level    cpuid.Level
	rows     [2][2]rowKernel
	scatter  scatterKernel
	rowsBF16 [2][2]rowKernelBF16
	// rowsMasked[far] and rowsMaskedBF16[far] are the masked row kernels
	// (MulCSRMasked, MulCSRMaskedBF16).
	rowsMasked     [2]rowKernelMasked
	rowsMaskedBF16 [2]rowKernelMaskedBF16

	// farPays is set where the far kernels beat the near ones: on Intel
	// cores and AMD's Zen 4, not on Zen 5. One core gathering from 488 MiB
	// of rows (BenchmarkRowKernelsOneCore, far-speedup) ran the far kernel
	// at 1.50–1.56× the near one's speed on an AMD EPYC (Zen 4; the bf16
	// far kernel at 1.33×) but at 0.74–0.75× on a Zen 5 (bf16 0.91–0.97×);
	// there prefetching into L2 with PREFETCHT1, or with PREFETCHT2 at half
	// the distance, ran at 0.76–0.83×, and into L1 at twice the distance at
	// 1.02–1.05×: the near kernels' L1 prefetch is the right one at any size.
	// On the Zen 4 the near kernel's speed does not change with its
	// distance (6 to 32 nonzeros ahead), nor the far one's (24 to 128).
	farPays bool
}

var generic = kernelSet{level: cpuid.Generic, scatter: scatterGeneric,
	rows:           [2][2]rowKernel{{mulRowsGeneric, mulRowsGeneric}, {mulRowsGeneric, mulRowsGeneric}},
	rowsBF16:       [2][2]rowKernelBF16{{mulRowsBF16Generic, mulRowsBF16Generic}, {mulRowsBF16Generic, mulRowsBF16Generic}},
	rowsMasked:     [2]rowKernelMasked{mulRowsMaskedGeneric, mulRowsMaskedGeneric},
	rowsMaskedBF16: [2]rowKernelMaskedBF16{mulRowsMaskedBF16Generic, mulRowsMaskedBF16Generic}}

// farGatherBytes is the size of the gathered rows (x's rows times the
// width gathered, in bytes) above which MulCSR and MulCSRBF16 use the row
// kernels that prefetch into L2, further ahead, on CPUs where that pays
// (Intel's and Zen 4's; see farPays): the rows then mostly come from memory, where
// prefetches into L1 run out of L1 miss buffers. On an Intel Xeon (Emerald Rapids), one
// core gathering 15 random 512-byte rows per output row from 24 MiB of rows
// was 1.2× faster prefetching into L1, 12 nonzeros ahead; from 48 MiB,
// 97 MiB, 195 MiB and 488 MiB, prefetching into L2, 48 ahead, was 1.1×,
// 1.1×, 1.3× and 1.3× faster. The two kernels' results are the same bits.
const farGatherBytes = 32 << 20

// streamOutputBytes is the size of y (its rows times ldy, in bytes) past
// which MulCSR and MulCSRBF16 (on AVX2, MulCSR alone) write it with
// non-temporal stores, when they overwrite it: twice the last-level cache (taken as 32 MiB at least,
// where CPUID does not report it), so that little of y would
// still be cached for whatever reads it next. An ordinary store reads
// each line of y from memory before writing it; a non-temporal one only
// writes it, and does not evict the gathered rows on its way. On an AMD
// EPYC (Zen 4), one core gathering 15 random 512-byte rows from 488 MiB
// per output row of 512 bytes ran 1.18–1.30× as fast with non-temporal
// stores (BenchmarkRowKernelsOneCore, stream-speedup, three runs), and
// two cores 1.22–1.26× (BenchmarkMulCSRStream); the near kernel gained
// 1.04×, its gather being the tighter bound.
var streamOutputBytes = 2 * max(cpuid.LastLevelCache, 32<<20)

// streamStores reports whether y, of rows rows at stride ldy, is written
// with non-temporal stores: it is overwritten, larger than
// streamOutputBytes, and its rows start on 64-byte boundaries, as the
// stores require.
func streamStores(y []float32, rows, ldy int, accumulate bool) bool {
	return !accumulate && ldy%16 == 0 && uintptr(unsafe.Pointer(unsafe.SliceData(y)))%64 == 0 &&
		int64(rows)*int64(ldy)*4 > streamOutputBytes
}

// rowKernels returns the float32 and bf16 row kernels for gathering xRows
// rows of width elements of elem bytes, into y with non-temporal stores
// if stream.
func (k *kernelSet) rowKernels(xRows, width, elem int, stream bool) (rowKernel, rowKernelBF16) {
	far, s := 0, 0
	if k.farPays && int64(xRows)*int64(width)*int64(elem) > farGatherBytes {
		far = 1
	}
	if stream {
		s = 1
	}
	return k.rows[far][s], k.rowsBF16[far][s]
}

// impl is the kernel set in use, the widest this CPU and build support.
var impl = kernelsFor(cpuid.Detected)

// Kernel names the row kernel in use: "avx512", "avx2" or "generic".
func Kernel() string { return impl.level.String() }

// minParallelWork is the number of multiply-adds below which a product runs
// on the calling goroutine: waking workers costs a few microseconds.
const minParallelWork = 1 << 15

// MulCSR computes y[i, :width] = Σ_{p in row i} val(p)·x[indices[p], :width] for every row i in [0, rows),
// or adds that to y when accumulate is true. Row i's entries are positions [offsets[i], offsets[i+1]).
// val(p) = values[p], or 1 when values is nil. x has row stride ldx, y has row stride ldy.
//
// y must not overlap x. It panics if the slices are too short for the shapes
// given, or if offsets decrease or a column index falls outside x.
func MulCSR(rows int, offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool) {
	if !checkProduct("MulCSR", rows, offsets, indices, values, ldx, width, len(y), ldy) {
		return
	}
	t := mulPool.Get()
	xRows := rowsIn(len(x), ldx, width)
	kernel, _ := impl.rowKernels(xRows, width, 4, streamStores(y, rows, ldy, accumulate))
	*t = mulTask{
		kernel: kernel, offsets: offsets, indices: indices, values: values,
		x: x, ldx: ldx, width: width, y: y, ldy: ldy, accumulate: accumulate,
		xRows: xRows, bounds: t.bounds,
	}
	t.run("MulCSR", rows)
}

// MulCSRBF16 is MulCSR with x in bfloat16 (uint16 bit patterns): each
// gathered row is widened exactly to float32 and the sums are float32, so
// the result is MulCSR's on the widened x. Gathering half the bytes is the
// point: SpMM is bound by memory.
func MulCSRBF16(rows int, offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool) {
	if !checkProduct("MulCSRBF16", rows, offsets, indices, values, ldx, width, len(y), ldy) {
		return
	}
	t := mulPool.Get()
	xRows := rowsIn(len(x), ldx, width)
	_, kernel := impl.rowKernels(xRows, width, 2, streamStores(y, rows, ldy, accumulate))
	*t = mulTask{
		kernelBF16: kernel, offsets: offsets, indices: indices, values: values,
		xb: x, ldx: ldx, width: width, y: y, ldy: ldy, accumulate: accumulate,
		xRows: xRows, bounds: t.bounds,
	}
	t.run("MulCSRBF16", rows)
}

// run splits the product's rows among workers by nonzeros and panics, on
// the caller's goroutine, if a row was invalid.
func (t *mulTask) run(op string, rows int) {
	offsets := t.offsets
	width := t.width
	nnz := offsets[rows] - offsets[0]
	chunks := 4 * parallel.Workers() // a few chunks per worker absorb uneven speed
	if (nnz+int64(rows))*int64(width) < minParallelWork {
		chunks = 1
	}
	t.bounds = balancedBounds(t.bounds[:0], offsets[:rows+1], chunks)
	parallel.ForBounds(t.bounds, t)
	bad, xRows := t.badRow.Load(), t.xRows
	badMask, bitRows := t.badMask.Load(), t.bitRows
	*t = mulTask{bounds: t.bounds}
	mulPool.Put(t)
	if badMask != 0 {
		panic(fmt.Sprintf("spmm: %s: row %d gathers a row of keep bits outside the mask's %d rows", op, badMask-1, bitRows))
	}
	if bad != 0 {
		panic(fmt.Sprintf("spmm: %s: row %d has decreasing offsets or a column index outside x's %d rows", op, bad-1, xRows))
	}
}

// MulCSRTrans computes y = Aᵀ·x for the rows×cols matrix A given by (offsets, indices, values):
// y[j, :width] = Σ over entries (i, j) of val·x[i, :width]; y has cols rows. Accumulates when asked.
//
// Workers split the feature columns in multiples of 16 floats, each scattering
// every nonzero into its own column slice of y, so no two write the same
// element or, mostly, the same cache line. Widths of 16 or less split the
// rows of A into narrowRowChunks chunks instead: each chunk but the first
// scatters into a private copy of y (kept for reuse, at most 256 MiB in
// all), summed into y after. Neither split depends on the number of cores,
// so the result is the same bits on any machine.
// The scatter reads and writes a row of y per nonzero, so
// when the same matrix is transposed repeatedly, building Aᵀ in CSR once and
// calling MulCSR is two to three times faster. y must not overlap x.
func MulCSRTrans(rows, cols int, offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool) {
	if rows < 0 || cols < 0 || width < 0 {
		panic("spmm: MulCSRTrans: negative rows, cols or width")
	}
	if width == 0 || cols == 0 && rows == 0 {
		return
	}
	if cols > 0 {
		if need := (cols-1)*ldy + width; ldy < width || len(y) < need {
			panic(fmt.Sprintf("spmm: MulCSRTrans: len(y) = %d, ldy = %d, need %d floats for %d×%d", len(y), ldy, need, cols, width))
		}
	}
	if rows > 0 {
		checkShapes("MulCSRTrans", rows, offsets, indices, values, ldx, width, ldy)
		if xr := rowsIn(len(x), ldx, width); xr < rows {
			panic(fmt.Sprintf("spmm: MulCSRTrans: x has %d rows, need %d", xr, rows))
		}
	}
	t := transPool.Get()
	*t = transTask{
		scatter: impl.scatter, rows: rows, cols: cols, offsets: offsets, indices: indices, values: values,
		x: x, ldx: ldx, width: width, y: y, ldy: ldy, accumulate: accumulate, bounds: t.bounds,
	}
	if rows > 0 {
		// Validate once up front: a bad index must not reach the scatter.
		t.validate()
	}
	var nnz int64
	if rows > 0 {
		nnz = offsets[rows] - offsets[0]
	}
	bad := t.badRow
	// The split depends on the problem, never on the core count, so that
	// the sums round the same on every machine: a column slice sums in the
	// order of a single pass, and narrow products always cut the rows into
	// the same chunks.
	switch {
	case bad != 0:
	case (nnz+int64(cols))*int64(width) < minParallelWork || rows == 0:
		t.bounds = columnBounds(t.bounds[:0], width, 1)
		parallel.ForBounds(t.bounds, t)
	case width > columnAlign:
		t.bounds = columnBounds(t.bounds[:0], width, parallel.Workers())
		parallel.ForBounds(t.bounds, t)
	default:
		t.transByRows()
	}
	if t.scratch != nil {
		transScratch.give(t.scratch)
	}
	*t = transTask{bounds: t.bounds}
	transPool.Put(t)
	if bad != 0 {
		panic(fmt.Sprintf("spmm: MulCSRTrans: row %d has decreasing offsets or a column index outside [0, %d)", bad-1, cols))
	}
}

// checkProduct checks a row product's arguments as checkShapes does, and
// that y (yLen values) holds rows rows of width at stride ldy, panicking
// with op's name otherwise; it reports whether there is anything to
// compute (rows and width both positive).
func checkProduct(op string, rows int, offsets []int64, indices []int32, values []float32, ldx, width, yLen, ldy int) bool {
	if rows <= 0 || width <= 0 {
		if rows < 0 || width < 0 {
			panic("spmm: " + op + ": negative rows or width")
		}
		return false
	}
	checkShapes(op, rows, offsets, indices, values, ldx, width, ldy)
	if need := (rows-1)*ldy + width; yLen < need {
		panic(fmt.Sprintf("spmm: %s: len(y) = %d, need %d", op, yLen, need))
	}
	return true
}

// checkShapes panics unless offsets, indices and values describe rows rows and
// the strides can hold width columns.
func checkShapes(op string, rows int, offsets []int64, indices []int32, values []float32, ldx, width, ldy int) {
	if ldx < width || ldy < width {
		panic(fmt.Sprintf("spmm: %s: strides ldx = %d, ldy = %d smaller than width %d", op, ldx, ldy, width))
	}
	if len(offsets) < rows+1 {
		panic(fmt.Sprintf("spmm: %s: len(offsets) = %d, need %d", op, len(offsets), rows+1))
	}
	lo, hi := offsets[0], offsets[rows]
	if lo < 0 || hi < lo || hi > int64(len(indices)) {
		panic(fmt.Sprintf("spmm: %s: offsets span [%d, %d) outside indices of length %d", op, lo, hi, len(indices)))
	}
	if values != nil && int64(len(values)) < hi {
		panic(fmt.Sprintf("spmm: %s: len(values) = %d, need %d", op, len(values), hi))
	}
}

// rowsIn is the number of complete rows of width floats at stride ld in n floats.
func rowsIn(n, ld, width int) int {
	if n < width {
		return 0
	}
	return (n-width)/ld + 1
}

// validRows reports the first row in [lo, hi) whose offsets decrease or whose
// column indices fall outside [0, limit), or -1 if all are valid.
func validRows(offsets []int64, indices []int32, lo, hi, limit int) int {
	lim := uint32(limit)
	for r := lo; r < hi; r++ {
		p0, p1 := offsets[r], offsets[r+1]
		if p1 < p0 {
			return r
		}
		for _, j := range indices[p0:p1] {
			if uint32(j) >= lim {
				return r
			}
		}
	}
	return -1
}

// balancedBounds appends to dst the row boundaries of chunks chunks of about
// equal cost, where a row costs its nonzeros plus one (for writing its output).
func balancedBounds(dst []int, offsets []int64, chunks int) []int {
	rows := len(offsets) - 1
	base := offsets[0]
	total := offsets[rows] - base + int64(rows)
	chunks = max(1, min(chunks, rows))
	dst = append(dst, 0)
	prev := 0
	for c := 1; c < chunks; c++ {
		target := total * int64(c) / int64(chunks)
		// First row r with cost(r) = offsets[r]-base+r >= target.
		lo, hi := prev, rows
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if offsets[m]-base+int64(m) < target {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo > prev {
			dst = append(dst, lo)
			prev = lo
		}
	}
	return append(dst, rows)
}

// columnAlign is the granularity, in floats, of the transpose's column split.
const columnAlign = 16

// columnBounds appends to dst slices column boundaries of [0, width), each a
// multiple of 16 floats (a 64-byte line) apart except the last, so that
// workers rarely share a cache line of y.
func columnBounds(dst []int, width, slices int) []int {
	const align = columnAlign
	blocks := (width + align - 1) / align
	slices = max(1, min(slices, blocks))
	dst = append(dst, 0)
	for s := 1; s < slices; s++ {
		dst = append(dst, blocks*s/slices*align)
	}
	return append(dst, width)
}

type mulTask struct {
	kernel       rowKernel
	kernelBF16   rowKernelBF16   // instead of kernel, when x is xb
	kernelMasked rowKernelMasked // instead of kernel, with the mask below
	// kernelMaskedBF16 is instead of kernel, when x is xb, with the mask below.
	kernelMaskedBF16 rowKernelMaskedBF16
	offsets          []int64
	indices          []int32
	values           []float32
	x                []float32
	xb               []uint16
	ldx, width       int
	y                []float32
	ldy              int
	accumulate       bool
	xRows            int
	badRow           atomic.Int64 // 1 + first invalid row seen, or 0
	bounds           []int

	bits    []uint64 // the masked product's Mask
	brows   []int32
	stride  int
	scale   float32
	bitRows int
	badMask atomic.Int64 // 1 + first row whose nonzeros' keep bits lie outside bits, or 0
}

var mulPool freelist.List[mulTask]

// Run computes rows [lo, hi) after checking them, so a bad index never reaches
// the kernel and the panic happens on the caller's goroutine.
func (t *mulTask) Run(lo, hi int) {
	if r := validRows(t.offsets, t.indices, lo, hi, t.xRows); r >= 0 {
		t.badRow.CompareAndSwap(0, int64(r)+1)
		return
	}
	if t.kernelMasked != nil || t.kernelMaskedBF16 != nil {
		t.runMasked(lo, hi)
		return
	}
	if t.kernelBF16 != nil {
		t.kernelBF16(t.offsets[lo:hi+1], t.indices, t.values, t.xb, t.ldx, t.width, t.y[lo*t.ldy:], t.ldy, t.accumulate)
		return
	}
	t.kernel(t.offsets[lo:hi+1], t.indices, t.values, t.x, t.ldx, t.width, t.y[lo*t.ldy:], t.ldy, t.accumulate)
}

type transTask struct {
	scatter    scatterKernel
	rows, cols int
	offsets    []int64
	indices    []int32
	values     []float32
	x          []float32
	ldx, width int
	y          []float32
	ldy        int
	accumulate bool
	badRow     int // 1 + first invalid row, or 0
	bounds     []int
	phase      transPhase
	scratch    []float32 // private outputs of the row split, kept across calls
}

type transPhase int

const (
	byColumns transPhase = iota // each chunk is a column slice of y
	byRows                      // each chunk is a row range of A with its own output
	reduce                      // each chunk is a row range of y to sum the outputs into
)

// narrowRowChunks is how many row chunks a product too narrow for the
// column split is cut into, on any number of cores.
const narrowRowChunks = 4

// maxTransScratch bounds the private outputs of the row split, in floats.
const maxTransScratch = 64 << 20

// transByRows handles widths too narrow for the column split: A's rows are
// cut into narrowRowChunks ranges of about equal nonzeros (fewer if the
// copies would pass maxTransScratch); the first range scatters into y, every
// other into a private zeroed copy, and the copies are then added into y in
// range order, in parallel over y's rows.
func (t *transTask) transByRows() {
	per := t.cols * t.width
	chunks := min(narrowRowChunks, 1+maxTransScratch/max(per, 1))
	t.bounds = balancedBounds(t.bounds[:0], t.offsets[:t.rows+1], chunks)
	if need := (len(t.bounds) - 2) * per; cap(t.scratch) < need {
		t.scratch = transScratch.take(need)
	}
	t.phase = byRows
	parallel.ForBounds(t.bounds, t)
	if len(t.bounds) > 2 {
		t.phase = reduce
		parallel.For(t.cols, max(1, minParallelWork/t.width), t)
	}
}

var transPool freelist.List[transTask]

// transScratch keeps the largest private-output buffer across garbage
// collections, which empty transPool: training calls the same narrow
// transpose every step and would otherwise reallocate it after every GC.
var transScratch scratchCache

type scratchCache struct {
	mu  sync.Mutex
	buf []float32
}

// take returns a buffer of at least n floats, the cached one if it is big
// enough; the cache then keeps the larger of the two.
func (s *scratchCache) take(n int) []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cap(s.buf) < n {
		s.buf = make([]float32, n)
	}
	b := s.buf
	s.buf = nil
	return b
}

// give returns a buffer to the cache.
func (s *scratchCache) give(b []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cap(b) > cap(s.buf) {
		s.buf = b
	}
}

func (t *transTask) validate() {
	if r := validRows(t.offsets, t.indices, 0, t.rows, t.cols); r >= 0 {
		t.badRow = r + 1
	}
}

// Run computes the columns [lo, hi) of y, or does its part of transByRows.
func (t *transTask) Run(lo, hi int) {
	switch t.phase {
	case byRows:
		t.runRows(lo, hi)
		return
	case reduce:
		t.runReduce(lo, hi)
		return
	}
	if !t.accumulate {
		for j := 0; j < t.cols; j++ {
			clear(t.y[j*t.ldy+lo : j*t.ldy+hi])
		}
	}
	if t.rows == 0 {
		return
	}
	t.scatter(t.offsets[:t.rows+1], t.indices, t.values, t.x[lo:], t.ldx, hi-lo, t.y[lo:], t.ldy)
}

// runRows scatters rows [lo, hi) of A into y for the first chunk and into the
// chunk's private output for the others.
func (t *transTask) runRows(lo, hi int) {
	c := 0
	for t.bounds[c] != lo {
		c++
	}
	out, ld := t.y, t.ldy
	if c == 0 {
		if !t.accumulate {
			for j := 0; j < t.cols; j++ {
				clear(t.y[j*t.ldy : j*t.ldy+t.width])
			}
		}
	} else {
		per := t.cols * t.width
		out, ld = t.scratch[(c-1)*per:c*per], t.width
		clear(out)
	}
	t.scatter(t.offsets[lo:hi+1], t.indices, t.values, t.x[lo*t.ldx:], t.ldx, t.width, out, ld)
}

// runReduce adds the private outputs' rows [lo, hi) into y.
func (t *transTask) runReduce(lo, hi int) {
	per, w := t.cols*t.width, t.width
	for c := 1; c+1 < len(t.bounds); c++ {
		part := t.scratch[(c-1)*per : c*per]
		if t.ldy == w {
			vec.Add(t.y[lo*w:hi*w], t.y[lo*w:hi*w], part[lo*w:hi*w])
			continue
		}
		for j := lo; j < hi; j++ {
			yr := t.y[j*t.ldy : j*t.ldy+w]
			vec.Add(yr, yr, part[j*w:(j+1)*w])
		}
	}
}
