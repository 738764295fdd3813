package nn

import (
	"math"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/tensor"
)

// gatSegment is the number of edges above which the GAT kernels cut a row
// (a hub's thousands of neighbours) into segments of this many edges that
// any worker may run. The segments' maxima, sums and partial aggregates are
// combined in segment order, and the cut is a constant, so a row's result is
// the same bits at any thread count. Shorter rows run whole, as before.
const gatSegment = 2048

// gatChunkEdges is roughly the fewest edges a chunk of short rows is given.
const gatChunkEdges = 512

// rowPlan splits the rows of a sparse pattern among workers for the GAT
// kernels: the rows of at most gatSegment edges in chunks balanced by edges,
// and the longer rows in segments of gatSegment edges.
type rowPlan struct {
	bounds  []int   // chunk c holds rows [bounds[c], bounds[c+1]); long rows in it are skipped
	long    []int32 // the rows of more than gatSegment edges
	first   []int   // long[r]'s segments are first[r] .. first[r+1]-1
	segLong []int32 // per segment: its row's index in long
	segLo   []int64 // per segment: its first edge
}

func gatRowCost(offsets []int64, i int) int64 {
	n := offsets[i+1] - offsets[i]
	if n > gatSegment {
		n = 0 // run by segments instead
	}
	return n + 1
}

func (p *rowPlan) build(offsets []int64, rows int) {
	p.long, p.first, p.segLong, p.segLo = p.long[:0], p.first[:0], p.segLong[:0], p.segLo[:0]
	var total int64
	for i := 0; i < rows; i++ {
		if offsets[i+1]-offsets[i] > gatSegment {
			p.first = append(p.first, len(p.segLo))
			for lo := offsets[i]; lo < offsets[i+1]; lo += gatSegment {
				p.segLong = append(p.segLong, int32(len(p.long)))
				p.segLo = append(p.segLo, lo)
			}
			p.long = append(p.long, int32(i))
		}
		total += gatRowCost(offsets, i)
	}
	p.first = append(p.first, len(p.segLo))
	chunks := int64(min(4*parallel.Workers(), rows)) // a few chunks per worker absorb uneven speed
	chunks = min(chunks, total/gatChunkEdges)
	p.bounds = append(p.bounds[:0], 0)
	var acc int64
	for i, c := 0, int64(1); i < rows && c < chunks; i++ {
		acc += gatRowCost(offsets, i)
		if acc >= total*c/chunks {
			p.bounds = append(p.bounds, i+1)
			for c < chunks && acc >= total*c/chunks {
				c++
			}
		}
	}
	if p.bounds[len(p.bounds)-1] != rows {
		p.bounds = append(p.bounds, rows)
	}
}

// forRows runs f on every row of at most gatSegment edges.
func (p *rowPlan) forRows(offsets []int64, f func(i int, start, end int64)) {
	parallel.ForBounds(p.bounds, rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if start, end := offsets[i], offsets[i+1]; end-start <= gatSegment {
				f(i, start, end)
			}
		}
	}))
}

// forSegments runs f on every segment s of the long rows: edges [a, b) of
// row i, which is long[r].
func (p *rowPlan) forSegments(offsets []int64, f func(s, r, i int, a, b int64)) {
	parallel.For(len(p.segLo), 1, rangeTask(func(lo, hi int) {
		for s := lo; s < hi; s++ {
			r := int(p.segLong[s])
			i := int(p.long[r])
			a := p.segLo[s]
			f(s, r, i, a, min(a+gatSegment, offsets[i+1]))
		}
	}))
}

// gatScratch holds the per-segment partial results of the long rows.
type gatScratch struct {
	seg   []float32 // per segment and head: a partial maximum or sum
	seg64 []float64 // per segment and head: a partial sum of exponentials
	row   []float32 // per long row and head: the combined value
	vecs  []float32 // per segment: a partial output row
}

// scoreMax sets the scores of row i's edges [a, b) in head h and returns
// their largest value after LeakyReLU.
func (l *GAT) scoreMax(adj *tensor.CSR, i, h int, a, b int64) float32 {
	hs := l.cfg.Heads
	asrc, adst, score := l.asrc.Data, l.adst.Data[i*hs+h], l.score
	mx := float32(math.Inf(-1))
	for p := a; p < b; p++ {
		s := asrc[int(adj.Indices[p])*hs+h] + adst
		score[int(p)*hs+h] = s
		if s < 0 {
			s *= gatLeakyReLUNeg
		}
		mx = max(mx, s)
	}
	return mx
}

// expSum sets α of edges [a, b) in head h to exp(score - mx), unnormalised,
// and returns their sum.
func (l *GAT) expSum(h int, a, b int64, mx float32) float64 {
	hs := l.cfg.Heads
	score, alpha := l.score, l.alpha
	var sum float64
	for p := a; p < b; p++ {
		s := score[int(p)*hs+h]
		if s < 0 {
			s *= gatLeakyReLUNeg
		}
		e := float32(math.Exp(float64(s - mx)))
		alpha[int(p)*hs+h] = e
		sum += float64(e)
	}
	return sum
}

// headOut returns head h's slice of an output row and its weight.
func (l *GAT) headOut(row []float32, h int) ([]float32, float32) {
	if l.cfg.Concat {
		c := l.cfg.Out
		return row[h*c : (h+1)*c], 1
	}
	return row, 1 / float32(l.cfg.Heads)
}

// aggregate scales α of row gi's edges [a, b) in head h by inv, applies
// attention dropout, and adds w·Σ α_p z_j to out.
func (l *GAT) aggregate(adj *tensor.CSR, gi uint64, h int, a, b int64, inv float32, out []float32, w float32) {
	hs, c := l.cfg.Heads, l.cfg.Out
	scale := float32(1 / (1 - l.cfg.AttentionDropout))
	alpha, drop, z, g, dropped := l.alpha, l.drop, l.zsrc, l.g, l.dropped
	for p := a; p < b; p++ {
		q := int(p)*hs + h
		al := alpha[q] * inv
		alpha[q] = al
		j := int(adj.Indices[p])
		if dropped {
			if attentionKept(l.key, l.thr, h, gi, g.globalID(j)) {
				al *= scale
			} else {
				al = 0
			}
			drop[q] = al
		}
		if al == 0 {
			continue
		}
		vec.Axpy(al*w, z.Row(j)[h*c:(h+1)*c], out)
	}
}

// attend computes the coefficients α and the aggregated rows y of every
// target: short rows whole, long rows by segments (a two-pass softmax whose
// maximum and sum are reduced over the segments in order).
func (l *GAT) attend(adj *tensor.CSR, y *tensor.Matrix) {
	hs := l.cfg.Heads
	p := &l.plan
	p.build(adj.Offsets, l.g.NumDst)
	p.forRows(adj.Offsets, func(i int, start, end int64) {
		yr := y.Row(i)
		clear(yr)
		gi := l.g.globalID(i)
		for h := 0; h < hs; h++ {
			mx := l.scoreMax(adj, i, h, start, end)
			out, w := l.headOut(yr, h)
			l.aggregate(adj, gi, h, start, end, float32(1/l.expSum(h, start, end, mx)), out, w)
		}
	})
	ns := len(p.segLo)
	if ns == 0 {
		return
	}
	sc := &l.scratch
	seg, seg64 := ensureSlice(&sc.seg, ns*hs), ensureSlice(&sc.seg64, ns*hs)
	row := ensureSlice(&sc.row, len(p.long)*hs)
	p.forSegments(adj.Offsets, func(s, _, i int, a, b int64) {
		for h := 0; h < hs; h++ {
			seg[s*hs+h] = l.scoreMax(adj, i, h, a, b)
		}
	})
	for r := range p.long {
		for h := 0; h < hs; h++ {
			mx := float32(math.Inf(-1))
			for s := p.first[r]; s < p.first[r+1]; s++ {
				mx = max(mx, seg[s*hs+h])
			}
			row[r*hs+h] = mx
		}
	}
	p.forSegments(adj.Offsets, func(s, r, _ int, a, b int64) {
		for h := 0; h < hs; h++ {
			seg64[s*hs+h] = l.expSum(h, a, b, row[r*hs+h])
		}
	})
	for r := range p.long {
		for h := 0; h < hs; h++ {
			var sum float64
			for s := p.first[r]; s < p.first[r+1]; s++ {
				sum += seg64[s*hs+h]
			}
			row[r*hs+h] = float32(1 / sum)
		}
	}
	width := y.Cols
	vecs := ensureSlice(&sc.vecs, ns*width)
	p.forSegments(adj.Offsets, func(s, r, i int, a, b int64) {
		part := vecs[s*width : (s+1)*width]
		clear(part)
		gi := l.g.globalID(i)
		for h := 0; h < hs; h++ {
			out, w := l.headOut(part, h)
			l.aggregate(adj, gi, h, a, b, row[r*hs+h], out, w)
		}
	})
	for r, i := range p.long {
		yr := y.Row(int(i))
		clear(yr)
		for s := p.first[r]; s < p.first[r+1]; s++ {
			vec.Add(yr, yr, vecs[s*width:(s+1)*width])
		}
	}
}

// dAlpha sets dscore of row i's edges [a, b) in head h to the gradient of
// their coefficients, dα, and returns Σ α·dα.
func (l *GAT) dAlpha(adj *tensor.CSR, dy *tensor.Matrix, i int, gi uint64, h int, a, b int64) float32 {
	hs, c := l.cfg.Heads, l.cfg.Out
	dout, w := l.headOut(dy.Row(i), h)
	scale := float32(1 / (1 - l.cfg.AttentionDropout))
	alpha, dscore, z, g, dropped := l.alpha, l.dscore, l.zsrc, l.g, l.dropped
	var dot float32
	for p := a; p < b; p++ {
		j := int(adj.Indices[p])
		var da float32
		if !dropped || attentionKept(l.key, l.thr, h, gi, g.globalID(j)) {
			da = vec.Dot(dout, z.Row(j)[h*c:(h+1)*c]) * w
			if dropped {
				da *= scale
			}
		}
		q := int(p)*hs + h
		dscore[q] = da
		dot += alpha[q] * da
	}
	return dot
}

// dScore turns dα of edges [a, b) in head h into the gradient of their
// scores before LeakyReLU, given dot = Σ α·dα over the row, and returns the
// sum of those gradients.
func (l *GAT) dScore(h int, a, b int64, dot float32) float32 {
	hs := l.cfg.Heads
	alpha, dscore, score := l.alpha, l.dscore, l.score
	var sum float32
	for p := a; p < b; p++ {
		q := int(p)*hs + h
		ds := alpha[q] * (dscore[q] - dot)
		if score[q] < 0 {
			ds *= gatLeakyReLUNeg
		}
		dscore[q] = ds
		sum += ds
	}
	return sum
}

// scoreGrads sets dscore for every edge and dadst, per target and head, to
// the sum of its edges' score gradients (the gradient of a_dst·z_i).
func (l *GAT) scoreGrads(adj *tensor.CSR, dy, dadst *tensor.Matrix) {
	hs := l.cfg.Heads
	p := &l.plan // built by the forward pass over the same pattern
	p.forRows(adj.Offsets, func(i int, start, end int64) {
		gi := l.g.globalID(i)
		for h := 0; h < hs; h++ {
			dot := l.dAlpha(adj, dy, i, gi, h, start, end)
			dadst.Data[i*hs+h] = l.dScore(h, start, end, dot)
		}
	})
	ns := len(p.segLo)
	if ns == 0 {
		return
	}
	sc := &l.scratch
	seg, row := ensureSlice(&sc.seg, ns*hs), ensureSlice(&sc.row, len(p.long)*hs)
	p.forSegments(adj.Offsets, func(s, _, i int, a, b int64) {
		gi := l.g.globalID(i)
		for h := 0; h < hs; h++ {
			seg[s*hs+h] = l.dAlpha(adj, dy, i, gi, h, a, b)
		}
	})
	p.sumSegments(seg, row, hs)
	p.forSegments(adj.Offsets, func(s, r, _ int, a, b int64) {
		for h := 0; h < hs; h++ {
			seg[s*hs+h] = l.dScore(h, a, b, row[r*hs+h])
		}
	})
	p.sumSegments(seg, row, hs)
	for r, i := range p.long {
		copy(dadst.Data[int(i)*hs:(int(i)+1)*hs], row[r*hs:(r+1)*hs])
	}
}

// sumSegments sets row[r·k+h] to the sum, in segment order, of seg[s·k+h]
// over long row r's segments.
func (p *rowPlan) sumSegments(seg, row []float32, k int) {
	for r := range p.long {
		for h := 0; h < k; h++ {
			var sum float32
			for s := p.first[r]; s < p.first[r+1]; s++ {
				sum += seg[s*k+h]
			}
			row[r*k+h] = sum
		}
	}
}

// gatherSource adds to dz, over source j's edges [a, b) of the transposed
// pattern in head h, the gradient of z_j through the aggregation, and
// returns the sum of those edges' score gradients.
func (l *GAT) gatherSource(adjT *tensor.CSR, perm []int64, dy *tensor.Matrix, h int, a, b int64, dz []float32) float32 {
	hs := l.cfg.Heads
	drop := l.alpha
	if l.dropped {
		drop = l.drop
	}
	dscore := l.dscore
	var ds float32
	for q := a; q < b; q++ {
		p := int(perm[q])*hs + h
		ds += dscore[p]
		al := drop[p]
		if al == 0 {
			continue
		}
		dout, w := l.headOut(dy.Row(int(adjT.Indices[q])), h)
		vec.Axpy(al*w, dout, dz)
	}
	return ds
}

// finishSource stores source j's score gradient ds in head h and adds the
// attention vectors' share of z_j's gradient to dz.
func (l *GAT) finishSource(j, h int, ds float32, dz []float32) {
	hs := l.cfg.Heads
	l.dasrc.Data[j*hs+h] = ds
	vec.Axpy(ds, l.AttSrc.Value.Row(h), dz)
	if j < l.g.NumDst {
		vec.Axpy(l.dadst.Data[j*hs+h], l.AttDst.Value.Row(h), dz)
	}
}

// sourceGrads sets dzext and dasrc for every source, gathered over the
// transposed pattern: short columns whole, long ones (a hub's) by segments
// whose partial rows and sums are added in segment order.
func (l *GAT) sourceGrads(adjT *tensor.CSR, perm []int64, dy, dzext *tensor.Matrix) {
	hs, c := l.cfg.Heads, l.cfg.Out
	p := &l.planT
	p.build(adjT.Offsets, l.g.NumSrc)
	p.forRows(adjT.Offsets, func(j int, start, end int64) {
		dzr := dzext.Row(j)
		clear(dzr)
		for h := 0; h < hs; h++ {
			dz := dzr[h*c : (h+1)*c]
			l.finishSource(j, h, l.gatherSource(adjT, perm, dy, h, start, end, dz), dz)
		}
	})
	ns := len(p.segLo)
	if ns == 0 {
		return
	}
	sc := &l.scratch
	width := hs * c
	seg, row := ensureSlice(&sc.seg, ns*hs), ensureSlice(&sc.row, len(p.long)*hs)
	vecs := ensureSlice(&sc.vecs, ns*width)
	p.forSegments(adjT.Offsets, func(s, _, _ int, a, b int64) {
		part := vecs[s*width : (s+1)*width]
		clear(part)
		for h := 0; h < hs; h++ {
			seg[s*hs+h] = l.gatherSource(adjT, perm, dy, h, a, b, part[h*c:(h+1)*c])
		}
	})
	p.sumSegments(seg, row, hs)
	for r, j := range p.long {
		dzr := dzext.Row(int(j))
		clear(dzr)
		for s := p.first[r]; s < p.first[r+1]; s++ {
			vec.Add(dzr, dzr, vecs[s*width:(s+1)*width])
		}
		for h := 0; h < hs; h++ {
			l.finishSource(int(j), h, row[r*hs+h], dzr[h*c:(h+1)*c])
		}
	}
}
