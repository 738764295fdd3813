package halo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// In the in-process group the uncompressed passes read the peers' rows
// where they lie, and the peers make the halo rows' gradients they read
// with the layer's fill, so that the layer need not write them out: the
// halo rows, at fp32 and bf16, and the gradients added into the owned
// rows are the bits that messages through buffers (copyingComm, as any
// other transport) give, and the exchange grows no buffer of its own
// beyond a cache-sized piece, where the other way holds a message per
// peer.
func TestExchangeInProcessNeedsNoBuffers(t *testing.T) {
	const n, k, w = 150, 4, 9
	_, l := testLayout(t, n, k, 8)
	global := randomRows(rand.New(rand.NewPCG(2, 3)), n, w)
	global16 := tensor.MatrixToBF16(global)
	for _, bf16 := range []bool{false, true} {
		type result struct{ ext, dh *tensor.Matrix }
		var results [2][]result
		var grown [2]int64
		for way, copying := range []bool{false, true} {
			results[way] = make([]result, k)
			before := memacct.Held(memacct.Communication)
			err := comm.Run(k, func(c comm.Communicator) error {
				if copying {
					c = copyingComm{c}
				}
				p := &l.Parts[c.Rank()]
				e, err := New(c, p, Config{Seed: 1, Layers: 2, BF16: bf16})
				if err != nil {
					return err
				}
				if _, direct := comm.DirectOf(c); (e.direct != nil) != direct || direct == copying {
					return fmt.Errorf("copying %v: direct exchange %v", copying, e.direct != nil)
				}
				var ext *tensor.Matrix
				if bf16 {
					ext16 := ownedBF16(p, global16)
					e.Begin(0, true)
					e.ForwardBF16(0, ext16, len(p.Owned))
					ext = ext16.Widen()
				} else if _, ext, err = forwardOwned(e, p, global); err != nil {
					return err
				}
				g := randomRows(rand.New(rand.NewPCG(uint64(c.Rank()), 4)), ext.Rows, w)
				own := len(p.Owned)
				dh := tensor.New(own, w)
				if e.PullsGradients(0) != !copying {
					return fmt.Errorf("copying %v: pulls gradients %v", copying, !copying)
				}
				if copying {
					e.Backward(0, g, dh, nil)
				} else {
					// The peers make the halo rows' gradient they read
					// with fill: dext has the owned rows alone.
					dext := tensor.FromSlice(own, w, slices.Clone(g.Data[:own*w]))
					e.Backward(0, dext, dh, func(lo, hi int, out *tensor.Matrix) {
						copy(out.Data, g.Data[(own+lo)*w:(own+hi)*w])
					})
				}
				results[way][c.Rank()] = result{ext, dh}
				return e.Err()
			})
			if err != nil {
				t.Fatalf("bf16 %v, copying %v: %v", bf16, copying, err)
			}
			grown[way] = memacct.Held(memacct.Communication) - before
		}
		for r := range k {
			a, b := results[0][r], results[1][r]
			if !slices.Equal(a.ext.Data, b.ext.Data) || !slices.Equal(a.dh.Data, b.dh.Data) {
				t.Fatalf("bf16 %v, rank %d: the in-process exchange's rows or gradients differ from the messages'", bf16, r)
			}
		}
		// A piece: the rows of the longest message, or a cache-sized part.
		longest := 0
		for _, p := range l.Parts {
			for _, rows := range p.Send {
				longest = max(longest, len(rows))
			}
		}
		piece := int64(4 * w * min(longest, rowChunk/w))
		if grown[0] > int64(k)*piece || grown[1] <= int64(k)*piece {
			t.Errorf("bf16 %v: the exchange's buffers grew by %d bytes in process, %d through messages; a piece is %d", bf16, grown[0], grown[1], piece)
		}
	}
}

// In the in-process group an uncompressed pass shares one buffer: every
// part writes its owned rows into Shared's own rows, and after Written
// the buffer holds every source's global row where SourceRows says, at
// fp32 and bf16; the traffic is counted as the exchange's, the buffer
// once for the group, and a compressed pass or another transport shares
// nothing.
func TestExchangeSharesRowsInProcess(t *testing.T) {
	const n, k, w = 150, 4, 9
	_, l := testLayout(t, n, k, 8)
	global := randomRows(rand.New(rand.NewPCG(2, 3)), n, w)
	global16 := tensor.MatrixToBF16(global)
	var bytes [2][k]int64 // [shared, copied][rank]: forward bytes sent
	for way, copying := range []bool{false, true} {
		before := memacct.Held(memacct.Activations)
		err := comm.Run(k, func(c comm.Communicator) error {
			if copying {
				c = copyingComm{c}
			}
			p := &l.Parts[c.Rank()]
			codec, _ := compress.New("quant8")
			e, err := New(c, p, Config{Seed: 1, Layers: 2, Codec: codec})
			if err != nil {
				return err
			}
			site := ForwardSites + "1"
			e.Begin(0, true)
			if copying {
				_, _, err := forwardOwned(e, p, global) // layer 0 is compressed
				if err != nil {
					return err
				}
				h := tensor.New(len(p.Owned), w)
				for i, v := range p.Owned {
					copy(h.Row(i), global.Row(int(v)))
				}
				e.Forward(1, h, tensor.New(len(p.Owned)+len(p.Halo), w))
				bytes[way][c.Rank()] = c.Stats().Site(site).BytesSent
				return e.Err()
			}
			if all, _ := e.Shared(0, w); all != nil {
				return fmt.Errorf("a compressed pass is shared")
			}
			for _, bf16 := range []bool{false, true} {
				if bf16 {
					all, own := e.SharedBF16(1, w)
					for i, v := range p.Owned {
						copy(own.Data[i*w:(i+1)*w], global16.Data[int(v)*w:(int(v)+1)*w])
					}
					e.Written(1)
					for j, r := range e.SourceRows() {
						v := int(p.Global(int32(j)))
						if !slices.Equal(all.Data[int(r)*w:(int(r)+1)*w], global16.Data[v*w:(v+1)*w]) {
							return fmt.Errorf("rank %d, bf16: source %d (node %d) is not at row %d", c.Rank(), j, v, r)
						}
					}
					continue
				}
				all, own := e.Shared(1, w)
				if all == nil || all.Rows != n || own.Rows != len(p.Owned) {
					return fmt.Errorf("rank %d: shared %v rows, own %v", c.Rank(), all, own)
				}
				for i, v := range p.Owned {
					copy(own.Row(i), global.Row(int(v)))
				}
				e.Written(1)
				for j, r := range e.SourceRows() {
					v := int(p.Global(int32(j)))
					if !slices.Equal(all.Row(int(r)), global.Row(v)) {
						return fmt.Errorf("rank %d: source %d (node %d) is not at row %d", c.Rank(), j, v, r)
					}
				}
				bytes[way][c.Rank()] = c.Stats().Site(site).BytesSent
			}
			return e.Err()
		})
		if err != nil {
			t.Fatalf("copying %v: %v", copying, err)
		}
		grown := memacct.Held(memacct.Activations) - before
		if want := int64(4 * n * w); !copying && grown != want {
			t.Errorf("the shared buffer counts %d bytes, want %d: a float32 row per node, once", grown, want)
		}
	}
	for r := range k {
		if bytes[0][r] == 0 || bytes[0][r] != bytes[1][r] {
			t.Errorf("rank %d: the shared pass counts %d bytes sent, the exchange %d", r, bytes[0][r], bytes[1][r])
		}
	}
}

// The in-process group's shared buffers leave the memory account when the
// exchanges close: a process that runs one group after another (tests,
// benchmarks, a re-partition's new exchanges) holds the account it held
// before. A group whose parts make new exchanges in turn (each part's
// exchanges take turns: one closes before the next one's first pass)
// counts the buffers once while any part holds them.
func TestExchangeCloseReleasesSharedBuffers(t *testing.T) {
	const n, k, w = 150, 4, 9
	_, l := testLayout(t, n, k, 8)
	global := randomRows(rand.New(rand.NewPCG(2, 3)), n, w)
	kinds := []memacct.Kind{memacct.Activations, memacct.Communication}
	var before [2]int64
	for i, kind := range kinds {
		before[i] = memacct.Held(kind)
	}
	grown := func(i int) int64 { return memacct.Held(kinds[i]) - before[i] }
	// The placement's buffers: the parts' row counts, then a row index per node.
	placement := int64(8*k + 4*n)
	var mu sync.Mutex
	var during [][2]int64
	err := comm.Run(k, func(c comm.Communicator) error {
		p := &l.Parts[c.Rank()]
		pass := func(e *Exchange) error {
			e.Begin(0, true)
			all, own := e.Shared(1, w)
			if all == nil {
				return fmt.Errorf("rank %d: the pass is not shared", c.Rank())
			}
			for i, v := range p.Owned {
				copy(own.Row(i), global.Row(int(v)))
			}
			e.Written(1)
			return e.Err()
		}
		first, err := New(c, p, Config{Seed: 1, Layers: 2})
		if err != nil {
			return err
		}
		if err := pass(first); err != nil {
			return err
		}
		// A second exchange, as a re-partition makes, which takes over
		// once the first has closed: the odd parts close theirs while the
		// even ones are in the second's first pass, holding the buffers.
		second, err := New(c, p, Config{Seed: 1, Layers: 2})
		if err != nil {
			return err
		}
		if c.Rank()%2 == 1 {
			time.Sleep(20 * time.Millisecond)
		}
		first.Close()
		first.Close() // a second Close gives back nothing
		if err := pass(second); err != nil {
			return err
		}
		if err := c.Barrier("counted"); err != nil {
			return err
		}
		mu.Lock()
		during = append(during, [2]int64{grown(0), grown(1)})
		mu.Unlock()
		if err := c.Barrier("read"); err != nil {
			return err
		}
		second.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, g := range during {
		if g[0] != int64(4*n*w) || g[1] != placement {
			t.Errorf("reading %d: the account grew by %d bytes of activations and %d of communication, want %d and %d: the shared buffers, once",
				r, g[0], g[1], 4*n*w, placement)
		}
	}
	for i, kind := range []string{"activations", "communication"} {
		if g := grown(i); g != 0 {
			t.Errorf("after every exchange closed, the %s account holds %d bytes more than before", kind, g)
		}
	}
}

// A re-partition's exchanges take over the old ones' hold of the group's
// shared buffers (TakeOver): their passes reuse the buffers, read the new
// partition's rows, and the memory account grows no more. An exchange that
// closes after a newer one of its part took hold (out of turn) gives back
// its own hold only: the newer one keeps the buffers.
func TestTakeOverReusesSharedBuffers(t *testing.T) {
	const n, k, w = 150, 4, 9
	g, l1 := testLayout(t, n, k, 8)
	parts, err := partition.Random{}.Partition(g, k, partition.Options{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := partition.BuildLayout(g, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	global := randomRows(rand.New(rand.NewPCG(2, 3)), n, w)
	kinds := []memacct.Kind{memacct.Activations, memacct.Communication}
	var before [2]int64
	for i, kind := range kinds {
		before[i] = memacct.Held(kind)
	}
	grown := func() [2]int64 {
		return [2]int64{memacct.Held(kinds[0]) - before[0], memacct.Held(kinds[1]) - before[1]}
	}
	want := [2]int64{4 * n * w, 8*k + 4*n} // the rows; the placement's counts and row indices
	err = comm.Run(k, func(c comm.Communicator) error {
		r := c.Rank()
		// pass writes p's rows, checks every row the part reads and
		// returns the buffer and the account once every part is done.
		pass := func(e *Exchange, p *partition.Part) (*float32, [2]int64, error) {
			e.Begin(0, true)
			all, own := e.Shared(1, w)
			if all == nil {
				return nil, [2]int64{}, fmt.Errorf("rank %d: the pass is not shared", r)
			}
			for i, v := range p.Owned {
				copy(own.Row(i), global.Row(int(v)))
			}
			e.Written(1)
			if err := e.Err(); err != nil {
				return nil, [2]int64{}, err
			}
			rows := e.SourceRows()
			for j, v := range slices.Concat(p.Owned, p.Halo) {
				if !slices.Equal(all.Row(int(rows[j])), global.Row(int(v))) {
					return nil, [2]int64{}, fmt.Errorf("rank %d reads another node's row for node %d", r, v)
				}
			}
			if err := c.Barrier("written"); err != nil {
				return nil, [2]int64{}, err
			}
			held := grown()
			return &all.Data[0], held, c.Barrier("counted")
		}
		cfg := Config{Seed: 1, Layers: 2}
		first, err := New(c, &l1.Parts[r], cfg)
		if err != nil {
			return err
		}
		buf, held, err := pass(first, &l1.Parts[r])
		if err != nil {
			return err
		}
		if held != want {
			return fmt.Errorf("rank %d: the account grew by %v bytes of activations and communication, want %v", r, held, want)
		}
		second, err := New(c, &l2.Parts[r], cfg)
		if err != nil {
			return err
		}
		second.TakeOver(first)
		if b, h, err := pass(second, &l2.Parts[r]); err != nil {
			return err
		} else if b != buf || h != want {
			return fmt.Errorf("rank %d: after the take-over the pass had another buffer (%t), the account %v bytes, want %v", r, b != buf, h, want)
		}
		third, err := New(c, &l1.Parts[r], cfg)
		if err != nil {
			return err
		}
		if _, _, err := pass(third, &l1.Parts[r]); err != nil {
			return err
		}
		second.Close() // out of turn: the third took hold
		if err := c.Barrier("closed"); err != nil {
			return err
		}
		if b, h, err := pass(third, &l1.Parts[r]); err != nil {
			return err
		} else if b != buf || h != want {
			return fmt.Errorf("rank %d: after an older exchange closed, the newer one's pass had another buffer (%t), the account %v bytes, want %v", r, b != buf, h, want)
		}
		third.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := grown(); g != [2]int64{} {
		t.Errorf("after every exchange closed, the account holds %v bytes more than before", g)
	}
}
