package dataparallel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/sample"
)

// saintSampler is GraphSAINT over the parts (see sample.PartSaint): each
// drawing worker draws one subgraph a batch from its own part, walks
// crossing into other parts take their steps at the owners (one round
// trip of (node, key) pairs and the next nodes per step), and the
// subgraph's rows come from their owners, filtered to the subgraph, with
// the owners' normalisation, loss weights and labels (one round trip of
// the nodes asked with the subgraph's node list, and the rows). An epoch
// has ⌈T/budget⌉ batches, T the most training nodes of a worker.
// saint-node's subgraphs are a worker's own nodes and the edges between
// them: they need no exchange.
type saintSampler struct {
	sh      *share
	t       *batcher
	ps      *sample.PartSaint
	nb      int
	own     bool  // saint-node: every subgraph within the worker's part
	drawers []int // the ranks that draw subgraphs
	nodes   []int32

	weight  []float32   // per subgraph node, merged
	labels  []int32     // per subgraph node, merged
	wdrawn  [][]float32 // per worker: the weights of its nodes
	ldrawn  [][]int32   // per worker: the labels of its nodes
	wreply  []float32
	pending [][][2]int32 // per worker: the walks (subgraph, position) it steps for this one
	keys    []uint64
	outs    [][]int32
}

func newSaintSampler(cfg samplerConfig) (*saintSampler, error) {
	sh := cfg.sh
	var mass []float64
	if cfg.spec.Kind == "saint-node" {
		var err error
		if mass, err = sh.columnSums(sample.ColumnMass(sh.pg, sh.owned)); err != nil {
			return nil, err
		}
	}
	total := 0
	for _, n := range sh.trainCounts {
		total += n
	}
	ps, err := sample.NewPartSaint(sh.pg, cfg.spec, sh.owned, sh.train, total, cfg.agg, cfg.seed, mass)
	if err != nil {
		return nil, err
	}
	s := &saintSampler{sh: sh, t: cfg.t, ps: ps, own: cfg.spec.Kind == "saint-node",
		nb:     (slices.Max(sh.trainCounts) + ps.Budget() - 1) / ps.Budget(),
		wdrawn: make([][]float32, sh.size), ldrawn: make([][]int32, sh.size), pending: make([][][2]int32, sh.size)}
	if err := s.exchangeDrawers(); err != nil {
		return nil, err
	}
	if err := s.presample(cfg.spec.Coverage); err != nil {
		return nil, fmt.Errorf("dataparallel: pre-sampling GraphSAINT's subgraphs: %w", err)
	}
	return s, nil
}

func (s *saintSampler) batches() int { return s.nb }
func (s *saintSampler) local() bool  { return s.own }

func (s *saintSampler) norm(_, _, micros int) float64 { return float64(micros) }

// exchangeDrawers tells every worker whether this one draws subgraphs.
func (s *saintSampler) exchangeDrawers() error {
	send, recv := make([][]byte, s.sh.size), make([][]byte, s.sh.size)
	mine := []byte{0}
	if s.ps.Draws() {
		mine[0] = 1
	}
	for q := range send {
		send[q] = mine
	}
	if err := s.sh.c.AllToAll(SetupSite, send, recv); err != nil {
		return fmt.Errorf("dataparallel: exchanging who draws subgraphs: %w", err)
	}
	for q, b := range recv {
		if len(b) != 1 {
			return fmt.Errorf("dataparallel: rank %d sent %d bytes for whether it draws", q, len(b))
		}
		if b[0] == 1 {
			s.drawers = append(s.drawers, q)
		}
	}
	if len(s.drawers) == 0 {
		return errors.New("dataparallel: no worker can draw a GraphSAINT subgraph")
	}
	return nil
}

// draw fills s.outs with the nodes of the subgraphs of s.keys, each sorted
// and each node once, its walks stepped across the parts at site.
func (s *saintSampler) draw(site string) error {
	for len(s.outs) < len(s.keys) {
		s.outs = append(s.outs, nil)
	}
	s.outs = s.outs[:len(s.keys)]
	for j, k := range s.keys {
		s.outs[j] = s.ps.Draw(k, s.outs[j][:0])
	}
	if err := s.walk(site); err != nil {
		return err
	}
	for j, out := range s.outs {
		slices.Sort(out)
		s.outs[j] = slices.Compact(out)
	}
	return nil
}

// walk takes the steps of saint-rw's walks from the roots in s.outs: a
// walk at a node of this worker's steps here, one at another's is sent
// there with its step's key, and every step is a round trip on every
// worker. Afterwards s.outs[j] lists subgraph j's walks as
// sample.Saint's draw lists them.
func (s *saintSampler) walk(site string) error {
	roots, length := s.ps.Walks()
	t, me := s.t, int32(s.sh.rank)
	for step := 1; step <= length; step++ {
		for q := range t.send {
			t.send[q], s.pending[q] = t.send[q][:0], s.pending[q][:0]
		}
		for j, out := range s.outs {
			if len(out) == 0 { // this worker draws no subgraphs
				continue
			}
			last := len(out) - roots
			for w := range roots {
				v, k := out[last+w], s.ps.StepKey(s.keys[j], w, step)
				if q := s.sh.owner[v]; q != me {
					s.pending[q] = append(s.pending[q], [2]int32{int32(j), int32(len(out))})
					t.send[q] = binary.LittleEndian.AppendUint32(t.send[q], uint32(v))
					t.send[q] = binary.LittleEndian.AppendUint64(t.send[q], k)
					v = -1 // until the owner replies
				} else {
					v = s.ps.Step(v, k)
				}
				out = append(out, v)
			}
			s.outs[j] = out
		}
		err := t.roundTrip(site, func(q int, req, reply []byte) ([]byte, error) {
			if len(req)%12 != 0 {
				return reply, fmt.Errorf("dataparallel: rank %d sent %d bytes of walks", q, len(req))
			}
			for i := 0; i < len(req); i += 12 {
				v := int32(binary.LittleEndian.Uint32(req[i:]))
				if v < 0 || int(v) >= s.sh.n || s.sh.owner[v] != me {
					return reply, fmt.Errorf("dataparallel: rank %d asked rank %d to step a walk from node %d, which it does not own", q, me, v)
				}
				reply = binary.LittleEndian.AppendUint32(reply, uint32(s.ps.Step(v, binary.LittleEndian.Uint64(req[i+4:]))))
			}
			return reply, nil
		})
		if err != nil {
			return err
		}
		for q, at := range s.pending {
			next, err := readInt32s(nil, t.recv[q])
			if err != nil || len(next) != len(at) {
				return fmt.Errorf("dataparallel: rank %d stepped %d of %d walks", q, len(next), len(at))
			}
			for i, p := range at {
				u := next[i]
				if u < 0 || int(u) >= s.sh.n {
					return fmt.Errorf("dataparallel: rank %d stepped a walk to node %d, outside the graph", q, u)
				}
				s.outs[p[0]][p[1]] = u
			}
		}
	}
	return nil
}

// presample draws pre-sampling's subgraphs, 64 at a time as in one
// process, each drawn by the drawing worker j mod A, and has the owners
// count them: the subgraphs' sizes go to every worker, which stop at the
// same subgraph, and each subgraph's nodes to the owners of any of them.
func (s *saintSampler) presample(coverage float64) error {
	const group = 64
	target, sampled, first := coverage*float64(s.sh.n), 0.0, 0
	sizes := make([]uint32, group)
	send, recv := make([][]byte, s.sh.size), make([][]byte, s.sh.size)
	for sampled <= target {
		s.keys = s.keys[:0]
		var mine []int
		for j := range group {
			if s.drawers[(first+j)%len(s.drawers)] == s.sh.rank {
				mine = append(mine, j)
				s.keys = append(s.keys, s.ps.PresampleKey(first+j))
			}
		}
		if err := s.draw(SetupSite); err != nil {
			return err
		}
		clear(sizes)
		for i, j := range mine {
			sizes[j] = uint32(len(s.outs[i]))
		}
		if err := s.sumSizes(sizes, send, recv); err != nil {
			return err
		}
		m := 0
		for m < group && sampled <= target {
			sampled += float64(sizes[m])
			m++
		}
		if err := s.count(mine, m, send, recv); err != nil {
			return err
		}
		first += m
	}
	s.ps.SetPresampled(first, len(s.drawers))
	return nil
}

// sumSizes adds up every worker's subgraph sizes of a group (each
// subgraph's is known to its drawer only).
func (s *saintSampler) sumSizes(sizes []uint32, send, recv [][]byte) error {
	mine := make([]byte, 0, 4*len(sizes))
	for _, n := range sizes {
		mine = binary.LittleEndian.AppendUint32(mine, n)
	}
	for q := range send {
		send[q] = mine
	}
	if err := s.sh.c.AllToAll(SetupSite, send, recv); err != nil {
		return err
	}
	for q, b := range recv {
		if q == s.sh.rank {
			continue
		}
		if len(b) != 4*len(sizes) {
			return fmt.Errorf("rank %d sent %d bytes of subgraph sizes", q, len(b))
		}
		for j := range sizes {
			sizes[j] += binary.LittleEndian.Uint32(b[4*j:])
		}
	}
	return nil
}

// count sends the nodes of this worker's subgraphs of the group below m
// (mine lists their places in it) to the owners of any of them, and counts
// the subgraphs that hold this worker's nodes.
func (s *saintSampler) count(mine []int, m int, send, recv [][]byte) error {
	for q := range send {
		send[q] = nil
	}
	holds := make([]bool, s.sh.size)
	for i, j := range mine {
		if j >= m {
			continue
		}
		nodes := s.outs[i]
		clear(holds)
		for _, v := range nodes {
			holds[s.sh.owner[v]] = true
		}
		for q, h := range holds {
			if !h {
				continue
			}
			if q == s.sh.rank {
				if err := s.ps.Mark(j, nodes); err != nil {
					return err
				}
				continue
			}
			send[q] = binary.LittleEndian.AppendUint32(send[q], uint32(j))
			send[q] = binary.LittleEndian.AppendUint32(send[q], uint32(len(nodes)))
			send[q] = appendInt32s(send[q], nodes)
		}
	}
	if err := s.sh.c.AllToAll(SetupSite, send, recv); err != nil {
		return err
	}
	var nodes []int32
	for q, b := range recv {
		for q != s.sh.rank && len(b) > 0 {
			if len(b) < 8 {
				return fmt.Errorf("rank %d sent %d bytes of a subgraph", q, len(b))
			}
			j, n := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
			if j >= m || n > (len(b)-8)/4 {
				return fmt.Errorf("rank %d sent subgraph %d of %d nodes in %d bytes", q, j, n, len(b))
			}
			var err error
			if nodes, err = readInt32s(nodes[:0], b[8:8+4*n]); err != nil {
				return err
			}
			if err := s.ps.Mark(j, nodes); err != nil {
				return err
			}
			b = b[8+4*n:]
		}
	}
	s.ps.Count()
	return nil
}

func (s *saintSampler) sample(epoch, index int, b *sample.Batch) ([]int32, error) {
	s.keys = append(s.keys[:0], s.ps.BatchKey(epoch, index*s.sh.size+s.sh.rank))
	if err := s.draw(StructureSite); err != nil {
		return nil, err
	}
	s.nodes = append(s.nodes[:0], s.outs[0]...)
	if err := s.induce(s.nodes); err != nil {
		return nil, err
	}
	if err := s.ps.SetBatch(b, s.nodes, &s.t.merged, s.weight); err != nil {
		return nil, err
	}
	return s.labels, nil
}

// induce fetches the rows of the subgraph of nodes into s.t.merged, with
// their loss weights and labels: each owner is sent the nodes it owns and
// the subgraph's node list, and replies with their rows within it.
func (s *saintSampler) induce(nodes []int32) error {
	t, me := s.t, s.sh.rank
	if err := t.split(nodes); err != nil {
		return err
	}
	if !s.own {
		for q := range t.send {
			t.send[q] = t.send[q][:0]
			if len(t.ask[q]) > 0 && q != me {
				t.send[q] = binary.LittleEndian.AppendUint32(t.send[q], uint32(len(t.ask[q])))
				t.send[q] = appendInt32s(t.send[q], t.ask[q])
				t.send[q] = appendInt32s(t.send[q], nodes)
			}
		}
		var sub []int32
		err := t.roundTrip(StructureSite, func(q int, req, reply []byte) ([]byte, error) {
			if len(req) == 0 {
				return reply, nil
			}
			if len(req) < 4 {
				return reply, fmt.Errorf("dataparallel: rank %d sent %d bytes for a subgraph", q, len(req))
			}
			n := int(binary.LittleEndian.Uint32(req))
			if n > (len(req)-4)/4 {
				return reply, fmt.Errorf("dataparallel: rank %d sent %d bytes for %d nodes of a subgraph", q, len(req), n)
			}
			var err error
			if t.at[q], err = t.readOwned(t.at[q][:0], q, req[4:4+4*n]); err != nil {
				return reply, err
			}
			if sub, err = readInt32s(sub[:0], req[4+4*n:]); err != nil {
				return reply, err
			}
			if s.wreply, err = s.ps.Rows(t.at[q], sub, &t.reply, s.wreply); err != nil {
				return reply, err
			}
			reply = append(reply, compress.FloatBytes(s.wreply)...)
			for _, v := range t.at[q] {
				reply = binary.LittleEndian.AppendUint32(reply, uint32(s.sh.labels[s.sh.row(v)]))
			}
			return appendRows(reply, &t.reply), nil
		})
		if err != nil {
			return err
		}
	}
	for q := range t.drawn {
		n := len(t.ask[q])
		var err error
		switch {
		case q == me:
			s.wdrawn[q], err = s.ps.Rows(t.ask[q], nodes, &t.drawn[q], s.wdrawn[q])
			s.ldrawn[q] = s.ldrawn[q][:0]
			for _, v := range t.ask[q] {
				s.ldrawn[q] = append(s.ldrawn[q], s.sh.labels[s.sh.row(v)])
			}
		case n == 0:
			t.drawn[q].Start = append(t.drawn[q].Start[:0], 0)
		case len(t.recv[q]) < 8*n:
			err = fmt.Errorf("%d bytes for %d nodes", len(t.recv[q]), n)
		default:
			b := t.recv[q]
			s.wdrawn[q] = s.wdrawn[q][:0]
			for i := range n {
				s.wdrawn[q] = append(s.wdrawn[q], math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
			}
			if s.ldrawn[q], err = readInt32s(s.ldrawn[q][:0], b[4*n:8*n]); err == nil {
				err = readRows(&t.drawn[q], b[8*n:], n)
			}
		}
		if err != nil {
			return fmt.Errorf("dataparallel: a subgraph's rows from rank %d: %w", q, err)
		}
	}
	t.merge(len(nodes))
	s.weight, s.labels = s.weight[:0], s.labels[:0]
	for i := range nodes {
		q, j := t.from[i], t.slot[i]
		s.weight = append(s.weight, s.wdrawn[q][j])
		s.labels = append(s.labels, s.ldrawn[q][j])
	}
	return nil
}
