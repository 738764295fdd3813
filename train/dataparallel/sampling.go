package dataparallel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
)

// batcher moves what a worker's batches need between the workers: the
// rows owners draw for the destinations of a block, and the input rows'
// features. Every worker makes every exchange of every batch, with or
// without anything to ask: each exchange is a collective.
type batcher struct {
	sh   *share
	rows comm.RowsExchange

	send, recv [][]byte
	ask        [][]int32     // per worker: the nodes asked of it
	at         [][]int32     // per worker: the rows asked of this one
	from       []int32       // per destination: its owner
	slot       []int32       // per destination: its place in its owner's list
	drawn      []sample.Rows // per worker: the rows it drew for this one
	reply      sample.Rows   // the rows this worker draws for another
	merged     sample.Rows
	x          tensor.Matrix // the batch's input features, dense
	sparse     sparseGather  // the batch's input features, sparse

	// codec, when set, compresses the training batches' feature rows at
	// ratio, each message keyed by key with its sender and receiver.
	codec   compress.Compressor
	ratio   float64
	key     compress.Key
	rowBuf  []float32   // the rows a peer asked for, to encode
	decoded [][]float32 // per worker: the rows it sent, decoded
}

func newBatcher(sh *share) *batcher {
	n := sh.size
	return &batcher{sh: sh, rows: comm.Rows(sh.c),
		send: make([][]byte, n), recv: make([][]byte, n), ask: make([][]int32, n), at: make([][]int32, n),
		drawn: make([]sample.Rows, n)}
}

// split lists, per worker, the nodes of ids it owns (this worker's too),
// and notes each node's owner and place in that list.
func (t *batcher) split(ids []int32) error {
	for q := range t.ask {
		t.ask[q] = t.ask[q][:0]
	}
	t.from, t.slot = t.from[:0], t.slot[:0]
	for _, v := range ids {
		if v < 0 || int(v) >= t.sh.n {
			return fmt.Errorf("dataparallel: node %d outside the graph's %d nodes", v, t.sh.n)
		}
		q := t.sh.owner[v]
		t.from = append(t.from, q)
		t.slot = append(t.slot, int32(len(t.ask[q])))
		t.ask[q] = append(t.ask[q], v)
	}
	return nil
}

// askOwners sends every other worker the nodes asked of it, and returns
// what each asked of this one (decoded into t.at).
func (t *batcher) askOwners(site string) error {
	for q := range t.send {
		t.send[q] = t.send[q][:0]
		if q != t.sh.rank {
			t.send[q] = appendInt32s(t.send[q], t.ask[q])
		}
	}
	if err := t.sh.c.AllToAll(site, t.send, t.recv); err != nil {
		return err
	}
	for q := range t.at {
		t.at[q] = t.at[q][:0]
		if q == t.sh.rank {
			continue
		}
		var err error
		if t.at[q], err = t.readOwned(t.at[q], q, t.recv[q]); err != nil {
			return err
		}
	}
	return nil
}

// readOwned appends to dst the node ids b holds, which worker q asked of
// this one: nodes it owns, or an error.
func (t *batcher) readOwned(dst []int32, q int, b []byte) ([]int32, error) {
	n := len(dst)
	dst, err := readInt32s(dst, b)
	if err != nil {
		return dst, err
	}
	for _, v := range dst[n:] {
		if v < 0 || int(v) >= t.sh.n || t.sh.owner[v] != int32(t.sh.rank) {
			return dst, fmt.Errorf("dataparallel: rank %d asked rank %d for node %d, which it does not own", q, t.sh.rank, v)
		}
	}
	return dst, nil
}

// roundTrip sends every other worker its request, t.send[q], and answers
// each request of another worker q with answer(q, request, reply), the
// reply appended to reply's storage: two all-to-alls, after which
// t.recv[q] holds q's answer to this worker.
func (t *batcher) roundTrip(site string, answer func(q int, req, reply []byte) ([]byte, error)) error {
	t.send[t.sh.rank] = t.send[t.sh.rank][:0]
	if err := t.sh.c.AllToAll(site, t.send, t.recv); err != nil {
		return err
	}
	for q := range t.send {
		if q == t.sh.rank {
			continue
		}
		var err error
		if t.send[q], err = answer(q, t.recv[q], t.send[q][:0]); err != nil {
			return err
		}
	}
	return t.sh.c.AllToAll(site, t.send, t.recv)
}

// drawRows fetches the rows of dst into t.merged, in dst's order: each
// owner draws its destinations' with draw, this worker its own.
func (t *batcher) drawRows(site string, dst []int32, draw func(dst []int32, r *sample.Rows) error) error {
	if err := t.split(dst); err != nil {
		return err
	}
	for q := range t.send {
		t.send[q] = appendInt32s(t.send[q][:0], t.ask[q])
	}
	err := t.roundTrip(site, func(q int, req, reply []byte) ([]byte, error) {
		var err error
		if t.at[q], err = t.readOwned(t.at[q][:0], q, req); err != nil {
			return reply, err
		}
		if err := draw(t.at[q], &t.reply); err != nil {
			return reply, err
		}
		return appendRows(reply, &t.reply), nil
	})
	if err != nil {
		return err
	}
	for q := range t.drawn {
		var err error
		if q == t.sh.rank {
			err = draw(t.ask[q], &t.drawn[q])
		} else {
			err = readRows(&t.drawn[q], t.recv[q], len(t.ask[q]))
		}
		if err != nil {
			return fmt.Errorf("dataparallel: rows from rank %d: %w", q, err)
		}
	}
	t.merge(len(dst))
	return nil
}

// merge puts the owners' rows together in the destinations' order.
func (t *batcher) merge(n int) {
	m := &t.merged
	m.Start = append(m.Start[:0], 0)
	m.Pick, m.Vals, m.Self = m.Pick[:0], m.Vals[:0], m.Self[:0]
	for i := range n {
		r, j := &t.drawn[t.from[i]], t.slot[i]
		lo, hi := r.Start[j], r.Start[j+1]
		m.Pick = append(m.Pick, r.Pick[lo:hi]...)
		if len(r.Vals) > 0 {
			m.Vals = append(m.Vals, r.Vals[lo:hi]...)
		}
		m.Self = append(m.Self, r.Self[j])
		m.Start = append(m.Start, int64(len(m.Pick)))
	}
}

// appendRows encodes r: per row its length, then the self values, the
// picks and the values (absent for attention).
func appendRows(b []byte, r *sample.Rows) []byte {
	n := len(r.Start) - 1
	for i := range n {
		b = binary.LittleEndian.AppendUint32(b, uint32(r.Start[i+1]-r.Start[i]))
	}
	b = append(b, compress.FloatBytes(r.Self[:n])...)
	b = appendInt32s(b, r.Pick)
	return append(b, compress.FloatBytes(r.Vals)...)
}

// readRows decodes n rows that appendRows encoded.
func readRows(r *sample.Rows, b []byte, n int) error {
	if len(b) < 8*n {
		return fmt.Errorf("%d bytes for %d rows", len(b), n)
	}
	r.Start = append(r.Start[:0], 0)
	for i := range n {
		r.Start = append(r.Start, r.Start[i]+int64(binary.LittleEndian.Uint32(b[4*i:])))
	}
	r.Self = r.Self[:0]
	for i := range n {
		r.Self = append(r.Self, math.Float32frombits(binary.LittleEndian.Uint32(b[4*(n+i):])))
	}
	b = b[8*n:]
	m := int(r.Start[n])
	var vals int
	switch len(b) {
	case 4 * m:
	case 8 * m:
		vals = m
	default:
		return fmt.Errorf("%d bytes for %d picks", len(b), m)
	}
	var err error
	if r.Pick, err = readInt32s(r.Pick[:0], b[:4*m]); err != nil {
		return err
	}
	r.Vals = r.Vals[:0]
	for i := range vals {
		r.Vals = append(r.Vals, math.Float32frombits(binary.LittleEndian.Uint32(b[4*(m+i):])))
	}
	return nil
}

// gatherOwn returns the features of ids, nodes this worker owns, without
// an exchange: for samplers whose batches never leave the worker's part.
func (t *batcher) gatherOwn(ids []int32) (nn.Features, error) {
	x, w := t.sh.x, t.sh.x.cols()
	for _, v := range ids {
		if v < 0 || int(v) >= t.sh.n || t.sh.owner[v] != int32(t.sh.rank) {
			return nn.Features{}, fmt.Errorf("dataparallel: input node %d is not this worker's", v)
		}
	}
	if x.csr != nil {
		g := &t.sparse
		g.srcs = g.srcs[:0]
		for _, v := range ids {
			g.srcs = append(g.srcs, rowSource{r: t.sh.row(v)})
		}
		return g.gather(x, g.srcs), nil
	}
	out := &t.x
	out.Rows, out.Cols = len(ids), w
	out.Data = growTo(out.Data, len(ids)*w)
	for i, v := range ids {
		x.copyRow(out.Data[i*w:(i+1)*w], t.sh.row(v))
	}
	return nn.Features{Dense: out}, nil
}

// gather returns the features of ids: this worker's rows copied, the
// others' fetched from their owners.
func (t *batcher) gather(ids []int32) (nn.Features, error) {
	if err := t.split(ids); err != nil {
		return nn.Features{}, err
	}
	return t.fetch(FeatureSite, t.sh.x, ids)
}

// fetch returns the rows of x (a row per owned node, on every worker) of
// the nodes t.split last split, ids: the others' from their owners, in one
// exchange of the ids asked and one of the rows.
func (t *batcher) fetch(site string, x rowStore, ids []int32) (nn.Features, error) {
	if err := t.askOwners(site); err != nil {
		return nn.Features{}, err
	}
	for q := range t.at {
		for i, v := range t.at[q] {
			t.at[q][i] = int32(t.sh.row(v))
		}
	}
	w := x.cols()
	rowBytes := x.valueBytes() * w
	coded := t.codec != nil && site == FeatureSite
	switch {
	case coded:
		if err := t.exchangeCoded(site, x); err != nil {
			return nn.Features{}, err
		}
	case x.csr != nil:
		return t.exchangeSparse(site, x, ids)
	default:
		if err := t.rows(site, x.bytes(), rowBytes, t.at, t.recv); err != nil {
			return nn.Features{}, err
		}
		for q, b := range t.recv {
			if q != t.sh.rank && len(b) != rowBytes*len(t.ask[q]) {
				return nn.Features{}, fmt.Errorf("dataparallel: rank %d sent %d bytes for %d rows of %d", q, len(b), len(t.ask[q]), w)
			}
		}
	}
	out := &t.x
	out.Rows, out.Cols = len(ids), w
	out.Data = growTo(out.Data, len(ids)*w)
	for i, v := range ids {
		dst := out.Data[i*w : (i+1)*w]
		if q := t.from[i]; int(q) == t.sh.rank {
			x.copyRow(dst, t.sh.row(v))
		} else if j := int(t.slot[i]); coded {
			copy(dst, t.decoded[q][j*w:(j+1)*w])
		} else {
			x.decodeRow(dst, t.recv[q][rowBytes*j:rowBytes*(j+1)])
		}
	}
	return nn.Features{Dense: out}, nil
}

// exchangeSparse sends every worker the sparse rows of x it asked for (t.at,
// as local rows) and returns the rows of ids, the others' as they came.
func (t *batcher) exchangeSparse(site string, x rowStore, ids []int32) (nn.Features, error) {
	me := t.sh.rank
	for q := range t.send {
		t.send[q] = t.send[q][:0]
		if q != me {
			t.send[q] = x.appendSparseRows(t.send[q], t.at[q])
		}
	}
	if err := t.sh.c.AllToAll(site, t.send, t.recv); err != nil {
		return nn.Features{}, err
	}
	g := &t.sparse
	if len(g.msgs) != t.sh.size {
		g.msgs = make([]sparseRows, t.sh.size)
	}
	for q := range g.msgs {
		if q == me {
			continue
		}
		if err := readSparseRows(&g.msgs[q], t.recv[q], len(t.ask[q]), x.cols()); err != nil {
			return nn.Features{}, fmt.Errorf("dataparallel: rows from rank %d: %w", q, err)
		}
	}
	g.srcs = g.srcs[:0]
	for i, v := range ids {
		if q := int(t.from[i]); q == me {
			g.srcs = append(g.srcs, rowSource{r: t.sh.row(v)})
		} else {
			g.srcs = append(g.srcs, rowSource{msg: &g.msgs[q], r: int(t.slot[i])})
		}
	}
	return g.gather(x, g.srcs), nil
}

// exchangeCoded sends every worker the rows of x it asked for (t.at, as
// local rows) encoded by the codec, and decodes what each sent into
// t.decoded.
func (t *batcher) exchangeCoded(site string, x rowStore) error {
	w, me := x.cols(), t.sh.rank
	for q := range t.send {
		t.send[q] = t.send[q][:0]
		if q == me || len(t.at[q]) == 0 {
			continue
		}
		t.rowBuf = growTo(t.rowBuf, len(t.at[q])*w)
		for i, r := range t.at[q] {
			x.copyRow(t.rowBuf[i*w:(i+1)*w], int(r))
		}
		k := t.key
		k.From, k.To = me, q
		t.send[q] = t.codec.Encode(t.send[q], t.rowBuf, len(t.at[q]), w, t.ratio, k)
	}
	if err := t.sh.c.AllToAll(site, t.send, t.recv); err != nil {
		return err
	}
	if t.decoded == nil {
		t.decoded = make([][]float32, t.sh.size)
	}
	for q := range t.decoded {
		n := len(t.ask[q])
		if q == me || n == 0 {
			continue
		}
		t.decoded[q] = growTo(t.decoded[q], n*w)
		k := t.key
		k.From, k.To = q, me
		if err := t.codec.Decode(t.decoded[q], n, w, t.ratio, k, t.recv[q]); err != nil {
			return fmt.Errorf("dataparallel: rows from rank %d: %w", q, err)
		}
	}
	return nil
}

// growTo returns s with length n, reusing its storage when large enough.
func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
