package gemm

import (
	"fmt"
	"unsafe"

	"github.com/graft-gnn/graft/internal/freelist"
	"github.com/graft-gnn/graft/internal/parallel"
)

// Block sizes, in elements. A kc×nr panel of packed B (32 KiB for the AVX-512
// kernel) stays in L1 while an mc×kc block of packed A streams from L2.
const (
	kcBlock = 256
	mcBlock = 144 // a multiple of every kernel's mr
	// bBlockBytes bounds the packed op(B) shared by all workers; wider
	// products are done in column blocks of at most this size.
	bBlockBytes = 4 << 20
	// maxPartial bounds the per-chunk partial products of the reduction split.
	maxPartial = 1 << 20
)

// microKernel computes an mr×nr tile: c = a·b, or c += a·b when load is true,
// where a is k steps of mr packed values and b is k steps of nr packed values.
// Unless pf is 0, it also prefetches the prefetchBytes(k) bytes from pf on,
// so that the next block's packing reads from cache rather than DRAM.
// Step s of a starts astep values after step s-1: mr when packed, or the row
// stride of A when the kernel reads op(A) = Aᵀ in place.
type microKernel struct {
	name   string
	mr, nr int
	run    func(k int, a *float32, astep int, b, c *float32, ldc int, load bool, pf uintptr)
}

// prefetchBytes is how much memory a micro-kernel call of k steps prefetches:
// two cache lines per four steps.
func prefetchBytes(k int) uintptr { return uintptr(k/4) * 128 }

// prefetcher hands out, call by call, the memory the next block will read:
// up to two regions, such as the next slices of A and of B.
type prefetcher struct {
	next, end   uintptr
	next2, end2 uintptr
}

func (pf *prefetcher) take(n uintptr) uintptr {
	if pf.next >= pf.end {
		if pf.next2 >= pf.end2 {
			return 0
		}
		pf.next, pf.end, pf.next2 = pf.next2, pf.end2, pf.end2
	}
	p := pf.next
	pf.next += n
	return p
}

// span returns the memory holding rows row0..row0+rows, columns col0..col0+cols
// of s (row stride ld), or an empty range when the rows are so far apart that
// prefetching the whole span would mostly fetch memory nobody reads.
func span[T float32 | uint16](s []T, ld, row0, rows, col0, cols int) (start, end uintptr) {
	if rows <= 0 || cols <= 0 || (rows > 1 && ld > 2*cols) {
		return 0, 0
	}
	first := row0*ld + col0
	last := (row0+rows-1)*ld + col0 + cols
	if last > len(s) {
		return 0, 0
	}
	var v T
	size := unsafe.Sizeof(v)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return base + uintptr(first)*size, base + uintptr(last)*size
}

// spanA is span for the block op(A)[i0:i0+mb, p0:p0+kb].
func (p *problem) spanA(i0, mb, p0, kb int) (uintptr, uintptr) {
	r0, rows, c0, cols := i0, mb, p0, kb
	if p.transA {
		r0, rows, c0, cols = p0, kb, i0, mb
	}
	if p.a16 != nil {
		return span(p.a16, p.lda, r0, rows, c0, cols)
	}
	return span(p.a, p.lda, r0, rows, c0, cols)
}

// spanB is span for the block op(B)[p0:p0+kb, j0:j0+nb].
func (p *problem) spanB(p0, kb, j0, nb int) (uintptr, uintptr) {
	r0, rows, c0, cols := p0, kb, j0, nb
	if p.transB {
		r0, rows, c0, cols = j0, nb, p0, kb
	}
	if p.b16 != nil {
		return span(p.b16, p.ldb, r0, rows, c0, cols)
	}
	return span(p.b, p.ldb, r0, rows, c0, cols)
}

// trivial checks the dimensions and C, and does the products that need no
// kernel: none when m or n is 0, C = 0 (or C unchanged) when k is 0. It
// reports whether that was all.
func trivial(m, n, k int, c []float32, ldc int, accumulate bool) bool {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	if m == 0 || n == 0 {
		return true
	}
	checkMatrix("C", c, m, n, ldc)
	if k == 0 && !accumulate {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	return k == 0
}

// active is the micro-kernel Gemm uses; tests swap it to cover every path.
var active = bestKernel()

// Kernel names the micro-kernel in use: "avx512", "avx2" or "generic".
func Kernel() string { return active.name }

// Gemm computes C = op(A)·op(B), or C += op(A)·op(B) when accumulate is true.
// op(A) is m×k: A is stored m×k with row stride lda when !transA, k×m with stride lda when transA.
// op(B) is k×n: B is stored k×n with row stride ldb when !transB, n×k with stride ldb when transB.
// C is m×n with row stride ldc. Any of m, n, k may be 0 (k == 0 with !accumulate zeroes C).
func Gemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if trivial(m, n, k, c, ldc, accumulate) {
		return
	}
	if transA {
		checkMatrix("A", a, k, m, lda)
	} else {
		checkMatrix("A", a, m, k, lda)
	}
	if transB {
		checkMatrix("B", b, n, k, ldb)
	} else {
		checkMatrix("B", b, k, n, ldb)
	}
	p := problem{
		kern:   active,
		transA: transA, transB: transB,
		m: m, n: n, k: k,
		a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc,
		accumulate: accumulate,
	}
	p.run()
}

// run multiplies: by slices of k when the shape calls for it, else by rows.
func (p problem) run() {
	if chunks := p.reductionChunks(); chunks > 1 {
		splitReduction(&p, chunks)
	} else {
		splitRows(&p)
	}
}

// checkMatrix panics unless s holds a rows×cols matrix with row stride ld, so
// that the assembly kernels never touch memory outside the slices.
func checkMatrix(name string, s []float32, rows, cols, ld int) {
	if ld < max(cols, 1) {
		panic(fmt.Sprintf("gemm: ld%s = %d < %d", name, ld, cols))
	}
	if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: len(%s) = %d too short for %d×%d with stride %d", name, len(s), rows, cols, ld))
	}
}

// problem is one Gemm call; its methods are the blocked algorithm.
type problem struct {
	kern           *microKernel
	transA, transB bool
	m, n, k        int
	a              []float32
	lda            int
	b              []float32
	ldb            int
	c              []float32
	ldc            int
	accumulate     bool
	round          bool     // operands rounded to bfloat16 as packed (GemmRounded without bf16 kernels)
	a16, b16       []uint16 // bfloat16 operands widened as packed, in place of a and b (GemmBF16 without bf16 kernels)
}

// workspace is one goroutine's packing memory, pooled across calls.
type workspace struct {
	a     []float32 // packed mc×kc block of op(A)
	b     []float32 // packed block of op(B), when not shared
	tile  []float32 // mr×nr write-back buffer for ragged edges
	wideA []float32 // a bfloat16 block of A widened for packing (GemmBF16 by conversion)
	wideB []float32 // the same for B
}

// Packing memory and task structs are reused across calls and garbage
// collections, so a product allocates nothing.
var workspaces freelist.List[workspace]

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// packA packs op(A)[i0:i0+mb, p0:p0+kb] into mr-row panels, each kb steps of
// mr values, zero-padding the rows past mb.
func (p *problem) packA(ws *workspace, dst []float32, i0, mb, p0, kb int) {
	if p.a16 != nil && activeT.widen != nil {
		p.packA16(dst, i0, mb, p0, kb)
		return
	}
	if p.a16 != nil {
		q := *p
		q.a16 = nil
		if p.transA {
			q.a, q.lda = widenBlock(&ws.wideA, p.a16, p.lda, p0, kb, i0, mb), mb
		} else {
			q.a, q.lda = widenBlock(&ws.wideA, p.a16, p.lda, i0, mb, p0, kb), kb
		}
		q.packA(ws, dst, 0, mb, 0, kb)
		return
	}
	mr := p.kern.mr
	for r := 0; r < mb; r += mr {
		w := min(mr, mb-r)
		panel := dst[r*kb : r*kb+mr*kb]
		if p.transA { // op(A) column p is contiguous in A row p
			packCopy(panel, p.a, p.lda, p0, i0+r, w, kb, mr)
		} else {
			packTranspose(panel, p.a, p.lda, i0+r, p0, w, kb, mr)
		}
	}
	if p.round {
		roundValues(dst[:roundUp(mb, mr)*kb], dst[:roundUp(mb, mr)*kb])
	}
}

// packB packs op(B)[p0:p0+kb, j0:j0+nb] into nr-column panels, each kb steps
// of nr values, zero-padding the columns past nb.
func (p *problem) packB(ws *workspace, dst []float32, p0, kb, j0, nb int) {
	if p.b16 != nil && activeT.widen != nil {
		p.packB16(dst, p0, kb, j0, nb)
		return
	}
	if p.b16 != nil {
		q := *p
		q.b16 = nil
		if p.transB {
			q.b, q.ldb = widenBlock(&ws.wideB, p.b16, p.ldb, j0, nb, p0, kb), kb
		} else {
			q.b, q.ldb = widenBlock(&ws.wideB, p.b16, p.ldb, p0, kb, j0, nb), nb
		}
		q.packB(ws, dst, 0, kb, 0, nb)
		return
	}
	nr := p.kern.nr
	for j := 0; j < nb; j += nr {
		w := min(nr, nb-j)
		panel := dst[j*kb : j*kb+nr*kb]
		if p.transB {
			packTranspose(panel, p.b, p.ldb, j0+j, p0, w, kb, nr)
		} else {
			packCopy(panel, p.b, p.ldb, p0, j0+j, w, kb, nr)
		}
	}
	if p.round {
		roundValues(dst[:roundUp(nb, nr)*kb], dst[:roundUp(nb, nr)*kb])
	}
}

// packCopy packs src rows row0..row0+kb, columns col0..col0+w, into kb steps of
// width values each.
func packCopy(dst, src []float32, ld, row0, col0, w, kb, width int) {
	for s := 0; s < kb; s++ {
		d := dst[s*width : s*width+width]
		o := (row0+s)*ld + col0
		copy(d, src[o:o+w])
		clear(d[w:])
	}
}

// packTranspose packs src rows row0..row0+w, columns col0..col0+kb, so that
// step s holds column col0+s of those rows, in groups of up to 16 rows.
func packTranspose(dst, src []float32, ld, row0, col0, w, kb, width int) {
	transposeGroups(dst, src, ld, row0, col0, w, kb, width, activeT.run)
}

// transposeGroups is packTranspose from src of any element type, each
// group of up to 16 rows transposed by run (a transposer's run or widen),
// the lanes past w cleared.
func transposeGroups[T any](dst []float32, src []T, ld, row0, col0, w, kb, width int, run func(dst []float32, ldd, lanes int, src []T, lds, h, kb int)) {
	if kb == 0 {
		return
	}
	for g := 0; g < width; g += 16 {
		lanes := min(16, width-g)
		h := min(lanes, w-g)
		if h <= 0 {
			for s := 0; s < kb; s++ {
				clear(dst[s*width+g : s*width+g+lanes])
			}
			continue
		}
		run(dst[g:], width, lanes, src[(row0+g)*ld+col0:], ld, h, kb)
	}
}

// aBlock is an mb×kb block of op(A) as the micro-kernel reads it: the panel
// of rows i..i+mr starts at s[i*panel] and its steps are step apart.
type aBlock struct {
	s           []float32
	panel, step int
	edge        []float32 // the last, ragged panel packed, when s holds only full panels
}

// packedA describes a block packed by packA.
func (p *problem) packedA(ap []float32, kb int) aBlock {
	return aBlock{s: ap, panel: kb, step: p.kern.mr}
}

// directA describes op(A)[0:m, p0:p0+kb] read in place from A, possible when
// transA: op(A) column p is row p of A. Only the ragged last panel is packed.
func (p *problem) directA(ws *workspace, p0, kb int) aBlock {
	mr := p.kern.mr
	ab := aBlock{s: p.a[p0*p.lda:], panel: 1, step: p.lda}
	if rem := p.m % mr; rem != 0 {
		ws.a = grow(ws.a, mr*kb)
		packCopy(ws.a, p.a, p.lda, p0, p.m-rem, rem, kb, mr)
		ab.edge = ws.a
	}
	return ab
}

// macro multiplies an mb×kb block of op(A) by a packed kb×nb block of op(B)
// into c (row stride ldc), adding to c when load is true.
func (p *problem) macro(ws *workspace, ab aBlock, bp []float32, mb, nb, kb int, c []float32, ldc int, load bool, pf *prefetcher) {
	kern := p.kern
	mr, nr := kern.mr, kern.nr
	pfStep := prefetchBytes(kb)
	for j := 0; j < nb; j += nr {
		bpanel := &bp[j*kb]
		w := min(nr, nb-j)
		for i := 0; i < mb; i += mr {
			h := min(mr, mb-i)
			apanel, astep := &ab.s[i*ab.panel], ab.step
			if h < mr && ab.edge != nil {
				apanel, astep = &ab.edge[0], mr
			}
			if h == mr && w == nr {
				kern.run(kb, apanel, astep, bpanel, &c[i*ldc+j], ldc, load, pf.take(pfStep))
				continue
			}
			// Ragged edge: compute the whole tile aside, then keep its valid part.
			kern.run(kb, apanel, astep, bpanel, &ws.tile[0], nr, false, pf.take(pfStep))
			for r := 0; r < h; r++ {
				dst := c[(i+r)*ldc+j : (i+r)*ldc+j+w]
				src := ws.tile[r*nr : r*nr+w]
				if load {
					for x, v := range src {
						dst[x] += v
					}
				} else {
					copy(dst, src)
				}
			}
		}
	}
}

// rowTask computes the rows of C in panels [lo, hi) against a shared packed
// column block of op(B).
type rowTask struct {
	p      problem
	bp     []float32 // packed op(B)[:, j0:j0+nb], kc blocks one after another
	j0, nb int
}

func (t *rowTask) Run(lo, hi int) {
	p := &t.p
	mr := p.kern.mr
	ws := workspaces.Get()
	ws.tile = grow(ws.tile, mr*p.kern.nr)
	nbPad := roundUp(t.nb, p.kern.nr)
	i1 := min(hi*mr, p.m)
	for ic := lo * mr; ic < i1; ic += mcBlock {
		mb := min(mcBlock, i1-ic)
		for pc := 0; pc < p.k; pc += kcBlock {
			kb := min(kcBlock, p.k-pc)
			ws.a = grow(ws.a, roundUp(mb, mr)*kb)
			p.packA(ws, ws.a, ic, mb, pc, kb)
			var pf prefetcher
			if pc+kb < p.k {
				pf.next, pf.end = p.spanA(ic, mb, pc+kb, min(kcBlock, p.k-pc-kb))
			} else if ic+mb < i1 {
				pf.next, pf.end = p.spanA(ic+mb, min(mcBlock, i1-ic-mb), 0, min(kcBlock, p.k))
			}
			p.macro(ws, p.packedA(ws.a, kb), t.bp[pc*nbPad:], mb, t.nb, kb, p.c[ic*p.ldc+t.j0:], p.ldc, p.accumulate || pc > 0, &pf)
		}
	}
	workspaces.Put(ws)
}

var rowTasks freelist.List[rowTask]

// splitRows packs op(B) in column blocks shared by all workers and splits the
// rows of C among them.
func splitRows(p *problem) {
	nr := p.kern.nr
	nc := max(nr, bBlockBytes/4/p.k/nr*nr)
	t := rowTasks.Get()
	ws := workspaces.Get()
	panels := (p.m + p.kern.mr - 1) / p.kern.mr
	for jc := 0; jc < p.n; jc += nc {
		nb := min(nc, p.n-jc)
		nbPad := roundUp(nb, nr)
		ws.b = grow(ws.b, p.k*nbPad)
		for pc := 0; pc < p.k; pc += kcBlock {
			kb := min(kcBlock, p.k-pc)
			p.packB(ws, ws.b[pc*nbPad:], pc, kb, jc, nb)
		}
		*t = rowTask{p: *p, bp: ws.b, j0: jc, nb: nb}
		parallel.For(panels, max(1, mcBlock/p.kern.mr/2), t)
	}
	*t = rowTask{}
	rowTasks.Put(t)
	workspaces.Put(ws)
}

// reductionChunks is how many pieces to cut the reduction dimension into: more
// than one only when k dwarfs m and n, as in weight gradients Xᵀ·dY, where
// splitting rows of C would leave each worker re-reading all of A and B. The
// count depends on the shape alone, never on the number of cores, so a
// product rounds the same on every machine.
func (p *problem) reductionChunks() int {
	if p.k < 4*kcBlock || p.k < 4*max(p.m, p.n) {
		return 1
	}
	return max(1, min(reductionSplit, p.k/(2*kcBlock), maxPartial/(p.m*p.n)+1))
}

// reductionSplit is the most pieces a long reduction is cut into: enough to
// keep 8 cores busy; the partial products cost (pieces−1)·m·n additions.
const reductionSplit = 8

// reduceTask computes the partial product of one slice of the reduction
// dimension; chunk 0 writes to C, the others to partial buffers.
type reduceTask struct {
	p      problem
	bounds []int
	parts  []float32 // chunks-1 buffers of m×n
}

func (t *reduceTask) Run(lo, hi int) {
	p := &t.p
	mr, nr := p.kern.mr, p.kern.nr
	ws := workspaces.Get()
	ws.tile = grow(ws.tile, mr*nr)
	mPad, nPad := roundUp(p.m, mr), roundUp(p.n, nr)
	for ch := lo; ch < hi; ch++ {
		c, ldc, load := p.c, p.ldc, p.accumulate
		if ch > 0 {
			c, ldc, load = t.parts[(ch-1)*p.m*p.n:ch*p.m*p.n], p.n, false
		}
		for pc := t.bounds[ch]; pc < t.bounds[ch+1]; pc += kcBlock {
			kb := min(kcBlock, t.bounds[ch+1]-pc)
			var ab aBlock
			switch {
			case p.transA && p.a16 != nil: // widened, then read in place
				q := *p
				q.a, q.lda, q.a16 = widenBlock(&ws.wideA, p.a16, p.lda, pc, kb, 0, p.m), p.m, nil
				ab = q.directA(ws, 0, kb)
			case p.transA && !p.round:
				ab = p.directA(ws, pc, kb)
			default:
				ws.a = grow(ws.a, mPad*kb)
				p.packA(ws, ws.a, 0, p.m, pc, kb)
				ab = p.packedA(ws.a, kb)
			}
			ws.b = grow(ws.b, nPad*kb)
			p.packB(ws, ws.b, pc, kb, 0, p.n)
			var pf prefetcher
			if next := pc + kb; next < t.bounds[ch+1] {
				nkb := min(kcBlock, t.bounds[ch+1]-next)
				pf.next, pf.end = p.spanA(0, p.m, next, nkb)
				pf.next2, pf.end2 = p.spanB(next, nkb, 0, p.n)
			}
			p.macro(ws, ab, ws.b, p.m, p.n, kb, c, ldc, load, &pf)
			load = true
		}
	}
	workspaces.Put(ws)
}

var reduceTasks freelist.List[reduceTask]

// chunkBounds returns the bounds of chunks of k, in buf: cut at multiples
// of block so that every chunk packs full blocks.
func chunkBounds(buf []int, k, chunks, block int) []int {
	buf = buf[:0]
	for ch := 0; ch <= chunks; ch++ {
		buf = append(buf, min(k, roundUp(k*ch/chunks, block)))
	}
	buf[chunks] = k
	return buf
}

// addParts adds to the m×n matrix c the partial products of chunks 1 to
// chunks−1, m×n each in parts, in chunk order (chunk 0 wrote c itself).
func addParts(c []float32, ldc, m, n int, parts []float32, chunks int) {
	mn := m * n
	for ch := 1; ch < chunks; ch++ {
		part := parts[(ch-1)*mn : ch*mn]
		for i := 0; i < m; i++ {
			dst := c[i*ldc : i*ldc+n]
			for j, v := range part[i*n : i*n+n] {
				dst[j] += v
			}
		}
	}
}

// splitReduction cuts k into chunks computed in parallel and sums them into C.
func splitReduction(p *problem, chunks int) {
	t := reduceTasks.Get()
	t.p = *p
	t.bounds = chunkBounds(t.bounds, p.k, chunks, kcBlock)
	t.parts = grow(t.parts, (chunks-1)*p.m*p.n)
	parallel.ForBounds(idBounds(chunks), t)
	addParts(p.c, p.ldc, p.m, p.n, t.parts, chunks)
	t.p = problem{}
	reduceTasks.Put(t)
}

// idBounds returns the bounds 0, 1, …, n: one chunk per index.
func idBounds(n int) []int { return identity[:n+1] }

var identity = func() []int {
	s := make([]int, 257)
	for i := range s {
		s[i] = i
	}
	return s
}()
