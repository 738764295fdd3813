package sample

import (
	"fmt"
	"strings"
)

func init() {
	Register("ladies", "ladies:N1,N2,...[:rownorm] (LADIES: N nodes drawn per layer, the seeds' layer first, with replacement among the neighbours of the layer above, by the operator's squared column norms over its rows; rownorm: the paper's row normalisation, biased)", newLADIES)
}

// LADIES is the layer-dependent importance sampler of Zou et al. (NeurIPS
// 2019): FastGCN (see there for the self terms and what each model gets),
// but the candidates of a layer are the neighbours of the layer above's
// destinations D, drawn with probability p(u) ∝ ‖Â[D,u]‖², the squared
// column norm over D's rows (without the diagonal, whose self terms enter
// exactly), so no draw is spent on a node no destination reads. The n
// draws are with replacement, and entry (v ← u) is c·Â_vu/(n·p(u)) for u
// drawn c times: each sampled row is an unbiased estimate of the full row.
//
// Row normalisation. The paper (and its code) draws without replacement
// and then row-normalises the sampled adjacency; that lowers the variance
// but makes every row a ratio of estimates, biased. By default rows are
// left unbiased; with rownorm every row is scaled to sum as the full row
// does (Σ_u Â_vu for GCN, 1 for the mean), the paper's normalisation
// carried over to the symmetric operator, and a row of the self loop alone
// is scaled so too.
type LADIES struct {
	layerwise
	rowNorm bool
}

func newLADIES(args string, cfg Config) (Sampler, error) {
	args, opt, _ := strings.Cut(args, ":")
	if opt != "" && opt != "rownorm" {
		return nil, fmt.Errorf("option %q: want rownorm or nothing", opt)
	}
	sizes, err := parseSizes(args, cfg.Layers)
	if err != nil {
		return nil, err
	}
	return NewLADIES(cfg, sizes, opt == "rownorm"), nil
}

// NewLADIES returns a LADIES sampler drawing sizes[i] nodes for the i-th
// layer below the seeds, its rows normalised as the paper's if rowNorm.
func NewLADIES(cfg Config, sizes []int, rowNorm bool) *LADIES {
	return &LADIES{layerwise: newLayerwise(cfg, sizes), rowNorm: rowNorm}
}

func (s *LADIES) Sample(epoch, index int, b *Batch) error {
	seeds, err := s.seeds.seeds(epoch, index)
	if err != nil {
		return err
	}
	return s.SampleSeeds(epoch, index, seeds, b)
}

// SampleSeeds fills b with the blocks of the given seeds in batch index of
// epoch: the blocks Sample makes for a batch of those seeds.
func (s *LADIES) SampleSeeds(epoch, index int, seeds []int32, b *Batch) error {
	if err := s.sampleSeeds(epoch, index, seeds, b, s); err != nil {
		return err
	}
	if s.rowNorm && s.cfg.Aggregation != Attention {
		rows := graphRows{s.cfg.Graph, s.cfg.Aggregation}
		for l := range b.layers {
			s.normalize(&b.layers[l], rows)
		}
	}
	return nil
}

// draw makes the candidates of dst, with their cumulative mass of
// ‖Â[D,u]‖², and draws n of them by binary search.
func (s *LADIES) draw(l *layer, dst []int32, rows rowSource, n int, k uint64, local []int32) {
	agg := s.cfg.Aggregation
	l.cand, l.cum = l.cand[:0], l.cum[:0]
	for i, v := range dst {
		adj, skip := rows.row(i, v)
		if len(adj) == 0 {
			continue
		}
		rf := s.deg.rowFactor(v, len(adj), agg)
		for p, u := range adj {
			if p == skip {
				continue
			}
			c := local[u]
			if c == 0 {
				l.cand, l.cum = append(l.cand, u), append(l.cum, 0)
				c = int32(len(l.cand))
				local[u] = c
			}
			l.cum[c-1] += rf * rf
		}
	}
	total := 0.0
	for c, u := range l.cand {
		local[u] = 0
		cf := s.deg.colFactor(u, agg)
		total += l.cum[c] * cf * cf
		l.cum[c] = total
	}
	if len(l.cand) == 0 { // no destination has a neighbour
		l.drawn, l.factor = l.drawn[:0], l.factor[:0]
		return
	}
	l.drawn = growTo(l.drawn, n)
	r := stream{k}
	for i := range l.drawn {
		x := r.float() * total
		lo, hi := 0, len(l.cum)-1 // the first c with cum[c] > x
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if l.cum[m] > x {
				hi = m
			} else {
				lo = m + 1
			}
		}
		l.drawn[i] = int32(lo)
	}
	l.tally(n, func(c int32) float64 {
		mass := l.cum[c]
		if c > 0 {
			mass -= l.cum[c-1]
		}
		return mass / total
	})
	for j, c := range l.drawn {
		l.drawn[j] = l.cand[c]
	}
}

// normalize scales each row of l's operator to the full row's sum; rows
// are its destinations' rows.
func (s *LADIES) normalize(l *layer, rows rowSource) {
	agg, op := s.cfg.Aggregation, &l.op
	for i, v := range l.src[:op.Rows] {
		sum := 0.0
		for p := op.Offsets[i]; p < op.Offsets[i+1]; p++ {
			sum += float64(op.Values[p])
		}
		if sum == 0 {
			continue
		}
		full := 1.0
		if agg == GCN {
			adj, skip := rows.row(i, v)
			cols := s.deg.invSqrt[v] // the self loop's column factor
			for p, u := range adj {
				if p != skip {
					cols += s.deg.colFactor(u, agg)
				}
			}
			full = s.deg.rowFactor(v, len(adj), agg) * cols
		}
		f := full / sum
		for p := op.Offsets[i]; p < op.Offsets[i+1]; p++ {
			op.Values[p] = float32(float64(op.Values[p]) * f)
		}
	}
}
