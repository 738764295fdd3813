package gemm

import (
	"fmt"
	"unsafe"

	"github.com/graft-gnn/graft/internal/freelist"
	"github.com/graft-gnn/graft/internal/parallel"
)

// The bfloat16 product, C = op(A)·op(B) with A and B in bf16 and C in
// float32, packs its operands in pairs along k, the unit VDPBF16PS
// consumes: step s of a packed panel holds, as one uint32 per row (of A)
// or column (of B), elements 2s and 2s+1 of k, the lower in the low half.
// An odd k pads its last pair with zero. A row-major operand read along k
// (A, or Bᵀ) packs as a transposition of 32-bit pairs; one read across k
// (Aᵀ, or B) zips two rows of k into pairs.

// bfKernel computes an mr×nr tile from steps pairs: c = a·b, or c += a·b
// when load is true, where a is steps × mr packed pairs and b steps × nr.
// Unless pf is 0, it may also prefetch the prefetchBytes(steps) bytes from
// pf on, as microKernel does (the AMX kernel does not: its tile loads of
// the packed panels keep few misses in flight).
// A kernel with a nil run is the conversion fallback: GemmBF16 runs Gemm's
// kernels, which widen the operands to float32 block by block as they
// pack them. A kernel with rowsA (AMX tiles)
// takes a's panel row by row instead: mr rows of steps pairs each. Panels
// hold a multiple of stepAlign steps, the padding zero.
type bfKernel struct {
	name      string
	mr, nr    int
	rowsA     bool
	stepAlign int
	run       func(steps int, a, b *uint32, c *float32, ldc int, load bool, pf uintptr)
}

// mc is the row block of A packed at a time: mcBlock rounded down to
// whole panels of the kernel.
func (k *bfKernel) mc() int { return max(k.mr, mcBlock/k.mr*k.mr) }

// steps is the number of pairs a panel of the kernel holds for kb elements
// of k.
func (k *bfKernel) steps(kb int) int { return roundUp(steps(kb), max(1, k.stepAlign)) }

// convertBF16 widens to float32 and multiplies with Gemm's kernel: the
// path for CPUs with AVX-512 or AVX2 but without AVX512_BF16, and for
// Intel's without AMX (bestBF16Kernel).
var convertBF16 = &bfKernel{name: "convert"}

// kcBF16 is the k block, in elements (even, so blocks hold whole pairs): a
// 256-step × 32-column panel of packed B is 32 KiB, as for float32.
const kcBF16 = 512

// activeBF16 is the kernel GemmBF16 uses; tests swap it.
var activeBF16 = bestBF16Kernel()

// KernelBF16 names the bf16 kernel in use: "amx" (TDPBF16PS on AMX
// tiles), "avx512bf16" (VDPBF16PS), "convert" (widening to float32 for
// Gemm) or "generic".
func KernelBF16() string { return activeBF16.name }

// BF16Hardware reports whether GemmBF16 and GemmRounded run on the CPU's
// bf16 instructions (AMX tiles or VDPBF16PS), not on a conversion to
// float32 or the pure-Go twins.
func BF16Hardware() bool { return activeBF16.name == "amx" || activeBF16.name == "avx512bf16" }

// GemmBF16 is Gemm for bfloat16 operands (uint16 bit patterns) and a
// float32 C: C = op(A)·op(B), or C += op(A)·op(B) when accumulate is true,
// with the shapes and strides of Gemm. Products are exact and sums are
// float32; with VDPBF16PS, subnormal operands and partial sums are flushed
// to zero.
func GemmBF16(transA, transB bool, m, n, k int, a []uint16, lda int, b []uint16, ldb int, c []float32, ldc int, accumulate bool) {
	if trivial(m, n, k, c, ldc, accumulate) {
		return
	}
	ar, ac, br, bc := storedShapes(transA, transB, m, n, k)
	checkMatrix16("A", a, ar, ac, lda)
	checkMatrix16("B", b, br, bc, ldb)
	kern := activeBF16
	if kern.run == nil {
		// Gemm's kernels, the blocks widened to float32 as packed.
		p := problem{kern: active, transA: transA, transB: transB, m: m, n: n, k: k,
			a16: a, lda: lda, b16: b, ldb: ldb, c: c, ldc: ldc, accumulate: accumulate}
		p.run()
		return
	}
	p := bfProblem{
		kern: kern, transA: transA, transB: transB, m: m, n: n, k: k,
		a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, accumulate: accumulate,
	}
	p.run()
}

// storedShapes are A's and B's stored rows and columns for op(A)·op(B)
// of m×k by k×n.
func storedShapes(transA, transB bool, m, n, k int) (ar, ac, br, bc int) {
	ar, ac, br, bc = m, k, k, n
	if transA {
		ar, ac = k, m
	}
	if transB {
		br, bc = n, k
	}
	return ar, ac, br, bc
}

// run multiplies: by slices of k when the shape calls for it, else by rows.
func (p *bfProblem) run() {
	if chunks := p.reductionChunks(); chunks > 1 {
		p.splitReduction(chunks)
	} else {
		p.splitRows()
	}
}

func checkMatrix16(name string, s []uint16, rows, cols, ld int) {
	if ld < max(cols, 1) {
		panic(fmt.Sprintf("gemm: ld%s = %d < %d", name, ld, cols))
	}
	if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: len(%s) = %d too short for %d×%d with stride %d", name, len(s), rows, cols, ld))
	}
}

// bfProblem is one GemmBF16 call; its methods are the blocked algorithm,
// the float32 one's with pairs.
type bfProblem struct {
	kern           *bfKernel
	transA, transB bool
	m, n, k        int
	a              []uint16
	lda            int
	b              []uint16
	ldb            int
	a32, b32       []float32 // float32 operands, rounded as packed (GemmRounded), in place of a or b
	c              []float32
	ldc            int
	accumulate     bool
}

type bfWorkspace struct {
	a, b    []uint32
	zip     []uint32 // rows of Aᵀ zipped, before the transposition to rows
	tile    []float32
	scratch []uint16 // rows copied to an even stride for pairTranspose
	round   []uint16 // a block of a float32 operand rounded (GemmRounded)
}

var bfWorkspaces freelist.List[bfWorkspace]

func grow32(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}

// steps is the number of pairs in kb elements of k.
func steps(kb int) int { return (kb + 1) / 2 }

// packA packs op(A)[i0:i0+mb, p0:p0+kb] into mr-row panels of steps(kb)
// pairs, zero-padding the rows past mb.
func (p *bfProblem) packA(ws *bfWorkspace, dst []uint32, i0, mb, p0, kb int) {
	if p.a32 != nil {
		q := p.roundedA(ws, i0, mb, p0, kb)
		q.packA(ws, dst, 0, mb, 0, kb)
		return
	}
	if p.kern.rowsA {
		p.packRowsA(ws, dst, i0, mb, p0, kb)
		return
	}
	mr, st := p.kern.mr, steps(kb)
	for r := 0; r < mb; r += mr {
		w := min(mr, mb-r)
		panel := dst[r*st : r*st+mr*st]
		if p.transA {
			zipPairs(panel, p.a, p.lda, p0, i0+r, w, kb, mr)
		} else {
			pairTranspose(&ws.scratch, panel, p.a, p.lda, i0+r, p0, w, kb, mr)
		}
	}
}

// packRowsA packs op(A)[i0:i0+mb, p0:p0+kb] into mr-row panels laid out
// row by row, the layout of an AMX tile of A: row r of a panel holds the
// panel's steps pairs of its row, zero past kb and in rows past mb. A
// row-major A is copied; Aᵀ is zipped into pairs across rows, then its
// 32-bit pairs are transposed 16 steps at a time.
func (p *bfProblem) packRowsA(ws *bfWorkspace, dst []uint32, i0, mb, p0, kb int) {
	mr, st, n := p.kern.mr, p.kern.steps(kb), steps(kb)
	for r := 0; r < mb; r += mr {
		w := min(mr, mb-r)
		panel := dst[r*st : r*st+mr*st]
		if p.transA {
			ws.zip = grow32(ws.zip, n*mr)
			zipPairs(ws.zip, p.a, p.lda, p0, i0+r, w, kb, mr)
			src, to := float32s(ws.zip), float32s(panel)
			for g := 0; g < st; g += 16 {
				activeT.run(to[g:], st, 16, src[g*mr:], mr, min(16, n-g), mr)
			}
			continue
		}
		halves := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(panel))), 2*len(panel))
		for i := 0; i < w; i++ {
			row := halves[2*i*st : 2*(i+1)*st]
			copy(row, p.a[(i0+r+i)*p.lda+p0:][:kb])
			clear(row[kb:])
		}
		clear(panel[w*st:])
	}
}

// float32s views packed pairs as float32s for the transposers, which move
// bits and never do arithmetic.
func float32s(s []uint32) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// packB packs op(B)[p0:p0+kb, j0:j0+nb] into nr-column panels.
func (p *bfProblem) packB(ws *bfWorkspace, dst []uint32, p0, kb, j0, nb int) {
	if p.b32 != nil {
		q := p.roundedB(ws, p0, kb, j0, nb)
		q.packB(ws, dst, 0, kb, 0, nb)
		return
	}
	nr, st := p.kern.nr, p.kern.steps(kb)
	for j := 0; j < nb; j += nr {
		w := min(nr, nb-j)
		panel := dst[j*st : j*st+nr*st]
		if p.transB {
			pairTranspose(&ws.scratch, panel, p.b, p.ldb, j0+j, p0, w, kb, nr)
		} else {
			zipPairs(panel, p.b, p.ldb, p0, j0+j, w, kb, nr)
		}
		clear(panel[steps(kb)*nr:])
	}
}

// pairTranspose packs src rows row0..row0+w, columns col0..col0+kb, so
// that step s lane r holds columns col0+2s and col0+2s+1 of row row0+r,
// zero in lanes w..width. With an even stride the pairs are 32-bit words
// of a row and the float32 transposer moves them (it moves bits, never
// arithmetic); with an odd one, every other row starts mid-word, so each
// group of 16 rows is first copied to scratch at an even stride.
func pairTranspose(scratch *[]uint16, dst []uint32, src []uint16, ld, row0, col0, w, kb, width int) {
	full := kb / 2
	off := row0*ld + col0
	dstF := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst))
	for g := 0; g < width && full > 0; g += 16 {
		lanes := min(16, width-g)
		h := min(lanes, w-g)
		if h <= 0 {
			for s := 0; s < full; s++ {
				clear(dst[s*width+g : s*width+g+lanes])
			}
			continue
		}
		rows, lds := src[off+g*ld:], ld
		if ld%2 != 0 || off%2 != 0 {
			lds = 2 * full
			*scratch = grow16(*scratch, h*lds)
			for r := 0; r < h; r++ {
				copy((*scratch)[r*lds:(r+1)*lds], rows[r*ld:])
			}
			rows = *scratch
		}
		srcF := unsafe.Slice((*float32)(unsafe.Pointer(&rows[0])), len(rows)/2)
		activeT.run(dstF[g:], width, lanes, srcF, lds/2, h, full)
	}
	if kb%2 == 1 { // the last pair: one column and a zero
		d := dst[full*width : full*width+width]
		for r := 0; r < w; r++ {
			d[r] = uint32(src[off+r*ld+kb-1])
		}
		clear(d[w:])
	}
}

func grow16(s []uint16, n int) []uint16 {
	if cap(s) < n {
		return make([]uint16, n)
	}
	return s[:n]
}

// zipper interleaves pairs of rows, as zipGo describes.
type zipper struct {
	name string
	run  func(dst []uint32, ldd, lanes int, src []uint16, lds, h, steps int)
}

// activeZ is the zipper zipPairs uses; tests swap it.
var activeZ = bestZipper()

// zipPairs packs src rows row0..row0+kb, columns col0..col0+w, so that
// step s lane j holds column col0+j of rows row0+2s (low half) and
// row0+2s+1 (high half), zero in lanes w..width.
func zipPairs(dst []uint32, src []uint16, ld, row0, col0, w, kb, width int) {
	full := kb / 2
	if full > 0 {
		activeZ.run(dst, width, width, src[row0*ld+col0:], ld, w, full)
	}
	if kb%2 == 1 { // the last pair: one row and a zero
		d := dst[full*width : full*width+width]
		for j, v := range src[(row0+kb-1)*ld+col0:][:w] {
			d[j] = uint32(v)
		}
		clear(d[w:])
	}
}

// macro multiplies an mb×kb block of packed op(A) by a packed kb×nb block
// of op(B) into c (row stride ldc), adding to c when load is true.
func (p *bfProblem) macro(ws *bfWorkspace, ap, bp []uint32, mb, nb, kb int, c []float32, ldc int, load bool, pf *prefetcher) {
	kern := p.kern
	mr, nr, st := kern.mr, kern.nr, kern.steps(kb)
	pfStep := prefetchBytes(st)
	for j := 0; j < nb; j += nr {
		bpanel := &bp[j*st]
		w := min(nr, nb-j)
		for i := 0; i < mb; i += mr {
			h := min(mr, mb-i)
			apanel := &ap[i*st]
			if h == mr && w == nr {
				kern.run(st, apanel, bpanel, &c[i*ldc+j], ldc, load, pf.take(pfStep))
				continue
			}
			kern.run(st, apanel, bpanel, &ws.tile[0], nr, false, pf.take(pfStep))
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

// spanA is span for the block op(A)[i0:i0+mb, p0:p0+kb].
func (p *bfProblem) spanA(i0, mb, p0, kb int) (uintptr, uintptr) {
	if p.a32 != nil {
		if p.transA {
			return span(p.a32, p.lda, p0, kb, i0, mb)
		}
		return span(p.a32, p.lda, i0, mb, p0, kb)
	}
	if p.transA {
		return span(p.a, p.lda, p0, kb, i0, mb)
	}
	return span(p.a, p.lda, i0, mb, p0, kb)
}

// spanB is span for the block op(B)[p0:p0+kb, j0:j0+nb].
func (p *bfProblem) spanB(p0, kb, j0, nb int) (uintptr, uintptr) {
	if p.b32 != nil {
		if p.transB {
			return span(p.b32, p.ldb, j0, nb, p0, kb)
		}
		return span(p.b32, p.ldb, p0, kb, j0, nb)
	}
	if p.transB {
		return span(p.b, p.ldb, j0, nb, p0, kb)
	}
	return span(p.b, p.ldb, p0, kb, j0, nb)
}

// bfRowTask computes the rows of C in panels [lo, hi) against a shared
// packed column block of op(B).
type bfRowTask struct {
	p      bfProblem
	bp     []uint32 // packed op(B)[:, j0:j0+nb], kcBF16 blocks one after another
	j0, nb int
}

func (t *bfRowTask) Run(lo, hi int) {
	p := &t.p
	mr := p.kern.mr
	ws := bfWorkspaces.Get()
	ws.tile = grow(ws.tile, mr*p.kern.nr)
	nbPad := roundUp(t.nb, p.kern.nr)
	i1 := min(hi*mr, p.m)
	mc := p.kern.mc()
	for ic := lo * mr; ic < i1; ic += mc {
		mb := min(mc, i1-ic)
		for pc := 0; pc < p.k; pc += kcBF16 {
			kb := min(kcBF16, p.k-pc)
			ws.a = grow32(ws.a, roundUp(mb, mr)*p.kern.steps(kb))
			p.packA(ws, ws.a, ic, mb, pc, kb)
			var pf prefetcher
			if pc+kb < p.k {
				pf.next, pf.end = p.spanA(ic, mb, pc+kb, min(kcBF16, p.k-pc-kb))
			} else if ic+mb < i1 {
				pf.next, pf.end = p.spanA(ic+mb, min(mc, i1-ic-mb), 0, min(kcBF16, p.k))
			}
			p.macro(ws, ws.a, t.bp[pc/2*nbPad:], mb, t.nb, kb, p.c[ic*p.ldc+t.j0:], p.ldc, p.accumulate || pc > 0, &pf)
		}
	}
	bfWorkspaces.Put(ws)
}

var bfRowTasks freelist.List[bfRowTask]

// splitRows packs op(B) in column blocks shared by all workers and splits
// the rows of C among them.
func (p *bfProblem) splitRows() {
	nr, st := p.kern.nr, p.kern.steps(p.k) // blocks before the last hold kcBF16/2 steps, aligned
	nc := max(nr, bBlockBytes/4/st/nr*nr)
	t := bfRowTasks.Get()
	ws := bfWorkspaces.Get()
	panels := (p.m + p.kern.mr - 1) / p.kern.mr
	for jc := 0; jc < p.n; jc += nc {
		nb := min(nc, p.n-jc)
		nbPad := roundUp(nb, nr)
		ws.b = grow32(ws.b, st*nbPad)
		for pc := 0; pc < p.k; pc += kcBF16 {
			p.packB(ws, ws.b[pc/2*nbPad:], pc, min(kcBF16, p.k-pc), jc, nb)
		}
		*t = bfRowTask{p: *p, bp: ws.b, j0: jc, nb: nb}
		parallel.For(panels, max(1, p.kern.mc()/p.kern.mr/2), t)
	}
	*t = bfRowTask{}
	bfRowTasks.Put(t)
	bfWorkspaces.Put(ws)
}

// reductionChunks is problem.reductionChunks for the bf16 block size: it
// depends on the shape alone, so a product rounds the same on any machine.
func (p *bfProblem) reductionChunks() int {
	if p.k < 4*kcBF16 || p.k < 4*max(p.m, p.n) {
		return 1
	}
	return max(1, min(reductionSplit, p.k/(2*kcBF16), maxPartial/(p.m*p.n)+1))
}

// bfReduceTask computes the partial product of one slice of k; chunk 0
// writes to C, the others to partial buffers.
type bfReduceTask struct {
	p      bfProblem
	bounds []int
	parts  []float32
}

func (t *bfReduceTask) Run(lo, hi int) {
	p := &t.p
	mr, nr := p.kern.mr, p.kern.nr
	ws := bfWorkspaces.Get()
	ws.tile = grow(ws.tile, mr*nr)
	mPad, nPad := roundUp(p.m, mr), roundUp(p.n, nr)
	for ch := lo; ch < hi; ch++ {
		c, ldc, load := p.c, p.ldc, p.accumulate
		if ch > 0 {
			c, ldc, load = t.parts[(ch-1)*p.m*p.n:ch*p.m*p.n], p.n, false
		}
		for pc := t.bounds[ch]; pc < t.bounds[ch+1]; pc += kcBF16 {
			kb := min(kcBF16, t.bounds[ch+1]-pc)
			ws.a = grow32(ws.a, mPad*p.kern.steps(kb))
			p.packA(ws, ws.a, 0, p.m, pc, kb)
			ws.b = grow32(ws.b, nPad*p.kern.steps(kb))
			p.packB(ws, ws.b, pc, kb, 0, p.n)
			var pf prefetcher
			if next := pc + kb; next < t.bounds[ch+1] {
				nkb := min(kcBF16, t.bounds[ch+1]-next)
				pf.next, pf.end = p.spanA(0, p.m, next, nkb)
				pf.next2, pf.end2 = p.spanB(next, nkb, 0, p.n)
			}
			p.macro(ws, ws.a, ws.b, p.m, p.n, kb, c, ldc, load, &pf)
			load = true
		}
	}
	bfWorkspaces.Put(ws)
}

var bfReduceTasks freelist.List[bfReduceTask]

// splitReduction cuts k into chunks computed in parallel and sums them
// into C in chunk order.
func (p *bfProblem) splitReduction(chunks int) {
	t := bfReduceTasks.Get()
	t.p = *p
	t.bounds = chunkBounds(t.bounds, p.k, chunks, kcBF16)
	t.parts = grow(t.parts, (chunks-1)*p.m*p.n)
	parallel.ForBounds(idBounds(chunks), t)
	addParts(p.c, p.ldc, p.m, p.n, t.parts, chunks)
	t.p = bfProblem{}
	bfReduceTasks.Put(t)
}
