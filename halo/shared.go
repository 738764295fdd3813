package halo

import (
	"fmt"
	"unsafe"

	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/tensor"
)

// Parts in one process need not copy the halo rows of a layer's per-node
// quantity at all: every part writes its owned rows into one buffer the
// group shares (comm.Direct's Share), its rows after those of the parts
// before it, and aggregates over that buffer with its operator's columns
// renumbered to rows of it (SourceRows). A row per node in all, where
// copying the halo rows held, on a random partition, nearly a row per
// node in every part. The sums run over each row's entries in the same
// order, on the same values, so they are the exchange's bit for bit, and
// the traffic is counted as the exchange's.

// Site names of the shared buffers: the per-node quantities', and the
// setup's, which places each part's rows.
const (
	sharedSite      = "halo.shared"
	sharedCountSite = "halo.shared.counts"
	sharedRowsSite  = "halo.shared.rows"
)

// shared is what the shared passes keep.
type shared struct {
	rows       []int32 // rows[j]: source j's row in the shared buffer
	first      int     // this part's first row in it
	total      int     // rows in it: every part's
	size       int     // bytes asked for so far, at most
	rowBytes   int     // bytes of a row in the current pass
	all, own   tensor.Matrix
	all16, o16 tensor.MatrixBF16
}

// sharing reports whether layer's pass in the current step goes through
// the shared buffer: uncompressed, in the in-process group.
func (e *Exchange) sharing(layer int) bool {
	return e.direct != nil && e.err == nil && e.uncompressed(layer)
}

// Shared returns, when layer's pass in the current step is shared (nil,
// nil otherwise), the matrix of every part's rows of cols float32s and
// this part's rows in it (nn.SharedHalo). It returns once every part is
// done with what it did with the buffer before: the last pass's
// aggregation, or the backward pass's gradient.
func (e *Exchange) Shared(layer, cols int) (all, own *tensor.Matrix) {
	buf := e.shareBuffer(layer, 4*cols, 4*cols)
	if buf == nil {
		return nil, nil
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&buf[0])), len(buf)/4)
	s := e.shared
	s.all = tensor.Matrix{Rows: s.total, Cols: cols, Data: f[:s.total*cols]}
	s.own = tensor.Matrix{Rows: e.plan.own, Cols: cols, Data: f[s.first*cols : (s.first+e.plan.own)*cols]}
	return &s.all, &s.own
}

// SharedBF16 is Shared for a quantity held in bf16; the buffer is made
// large enough for the backward pass's float32 rows of the owned nodes
// too, which Shared gives it then.
func (e *Exchange) SharedBF16(layer, cols int) (all, own *tensor.MatrixBF16) {
	buf := e.shareBuffer(layer, 2*cols, 4*cols)
	if buf == nil {
		return nil, nil
	}
	h := unsafe.Slice((*uint16)(unsafe.Pointer(&buf[0])), len(buf)/2)
	s := e.shared
	s.all16 = tensor.MatrixBF16{Rows: s.total, Cols: cols, Data: h[:s.total*cols]}
	s.o16 = tensor.MatrixBF16{Rows: e.plan.own, Cols: cols, Data: h[s.first*cols : (s.first+e.plan.own)*cols]}
	return &s.all16, &s.o16
}

// Written waits until every part has written its rows of the current
// pass, counting the traffic the exchange would have sent.
func (e *Exchange) Written(layer int) {
	if e.err != nil {
		return
	}
	me, rb := e.plan.me, e.shared.rowBytes
	for q, rows := range e.plan.send {
		e.sentBytes[q], e.recvdBytes[q] = 0, 0
		if q != me {
			lo, hi := e.plan.haloRows(q)
			e.sentBytes[q], e.recvdBytes[q] = len(rows)*rb, (hi-lo)*rb
		}
	}
	if err := e.direct.AllToAllShared(e.site(layer, false), e.sentBytes, e.recvdBytes); err != nil {
		e.fail(fmt.Errorf("halo exchange, layer %d: %w", layer, err))
	}
}

// SourceRows maps each source (owned rows, then halo rows) to its row in
// the shared buffer; nil before the first shared pass.
func (e *Exchange) SourceRows() []int32 {
	if e.shared == nil {
		return nil
	}
	return e.shared.rows
}

// shareBuffer returns the shared buffer for a pass of layer whose rows
// take rowBytes bytes, made to hold reserve bytes a row (the backward
// pass's float32 rows of every part's owned nodes), or nil if the pass is
// not shared.
func (e *Exchange) shareBuffer(layer, rowBytes, reserve int) []byte {
	if !e.sharing(layer) {
		return nil
	}
	if e.shared == nil {
		if err := e.placeRows(); err != nil {
			e.fail(fmt.Errorf("halo: sharing rows: %w", err))
			return nil
		}
	}
	s := e.shared
	// Every part asks for the same sizes in the same order (the most asked
	// for so far), so all get the group's one buffer.
	size := max(s.total*max(rowBytes, reserve), s.size)
	buf, grew, err := e.direct.Share(sharedSite, e.holder, size)
	if err != nil {
		e.fail(fmt.Errorf("halo: sharing rows of layer %d: %w", layer, err))
		return nil
	}
	memacct.Add(memacct.Activations, int64(grew)) // the layers' quantity, once for the group
	s.size = size
	s.rowBytes = rowBytes
	if len(buf) == 0 {
		return nil
	}
	return buf
}

// placeRows finds where every part's rows go in the shared buffer: the
// parts' owned rows in rank order, each part's in its own order. A
// collective of the in-process group, made at the first shared pass.
func (e *Exchange) placeRows() error {
	n, me := e.comm.Size(), e.plan.me
	b, err := e.share(sharedCountSite, 8*n)
	if err != nil {
		return err
	}
	counts := unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), n)
	counts[me] = int64(len(e.part.Owned))
	if _, err := e.share(sharedCountSite, 8*n); err != nil { // every count written
		return err
	}
	s := &shared{}
	for r, c := range counts {
		if r < me {
			s.first += int(c)
		}
		s.total += int(c)
	}
	if _, err := e.share(sharedCountSite, 8*n); err != nil { // every count read
		return err
	}
	var at []int32
	if s.total > 0 {
		b, err := e.share(sharedRowsSite, 4*s.total)
		if err != nil {
			return err
		}
		at = unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), s.total) // at[node]: its row
		for i, v := range e.part.Owned {
			at[v] = int32(s.first + i)
		}
		if _, err := e.share(sharedRowsSite, 4*s.total); err != nil { // every row placed
			return err
		}
	}
	s.rows = make([]int32, len(e.part.Owned)+len(e.part.Halo))
	for j := range e.part.Owned {
		s.rows[j] = int32(s.first + j)
	}
	for j, v := range e.part.Halo {
		s.rows[len(e.part.Owned)+j] = at[v]
	}
	if s.total > 0 {
		if _, err := e.share(sharedRowsSite, 4*s.total); err != nil { // every row read
			return err
		}
	}
	e.shared = s
	return nil
}

// Close gives back the exchange's hold of the in-process group's shared
// buffers (comm.Direct's Unshare): once every part's exchanges on the group
// have closed, the group drops them, and the memory account (package
// memacct) takes back what their growth added to it. A group that runs
// several exchanges in turn (a re-partition makes new ones) keeps the
// buffers while an exchange holds them; each exchange gives back its own
// hold only, whatever the order its part's exchanges close in. The
// exchange is not used after Close.
func (e *Exchange) Close() {
	if e.direct == nil {
		return
	}
	memacct.Add(memacct.Activations, -int64(e.direct.Unshare(sharedSite, e.holder)))
	for _, site := range []string{sharedCountSite, sharedRowsSite} {
		memacct.Add(memacct.Communication, -int64(e.direct.Unshare(site, e.holder)))
	}
}

// TakeOver closes old, an exchange of the same rank of e's group that e
// replaces (a re-partition's), and gives e old's hold of the in-process
// group's shared buffers: when every part's new exchange takes over, the
// group keeps its buffers, and e's passes reuse them where they are large
// enough (the same graph's rows, however it is split), instead of the
// group dropping them and allocating them again. Reuse is safe: a shared
// pass writes every row it reads after a barrier (Share, Written) that
// waits for every part to be done with the buffer's last use. e gives back
// what it held itself, if anything, first. old is not used after.
func (e *Exchange) TakeOver(old *Exchange) {
	if old == nil || old == e {
		return
	}
	if e.direct == nil || old.direct == nil {
		old.Close()
		return
	}
	e.Close()
	e.holder, old.holder = old.holder, e.holder
}

// share is Share for the placement's buffers, counted as the exchange's
// memory.
func (e *Exchange) share(site string, size int) ([]byte, error) {
	b, grew, err := e.direct.Share(site, e.holder, size)
	memacct.Add(memacct.Communication, int64(grew))
	return b, err
}
