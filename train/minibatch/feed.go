package minibatch

import (
	"fmt"
	"sync"
	"time"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
)

// prepared is a batch sampled and gathered, ready for the model.
type prepared struct {
	epoch, index int
	batch        sample.Batch
	x            nn.Features // the input rows' features
	labels       []int32     // per output row
	gather       gatherer

	sampleSeconds, gatherSeconds float64
	err                          error
}

// feed samples and gathers batches ahead of the compute, in a goroutine of
// its own, depth batches deep, in the order the loop takes them: every
// batch of an epoch, then the next epoch's.
type feed struct {
	sampler sample.Sampler
	x       input
	labels  []int32
	depth   int

	free  chan *prepared
	ready chan *prepared
	stop  chan struct{}
	done  sync.WaitGroup
	next  struct{ epoch, index int } // what ready's next batch is, once started
	on    bool
	noX   bool // the batches' features are not gathered

	// reads is the model's nn.Model.ReadsSelected: a batch whose input
	// rows the model reads where they lie gathers its destinations' alone.
	reads func([]*nn.Block, nn.Features) bool
	// head is the model's nn.Model.ReadsSelectedHead: such a batch
	// gathers its destinations' rows only if it is set.
	head bool
}

// newFeed returns a feed that prepares up to depth batches ahead while its
// caller holds up to hold (an optimiser step's micro-batches).
func newFeed(s sample.Sampler, x input, labels []int32, depth, hold int) *feed {
	depth, hold = max(depth, 1), max(hold, 1)
	f := &feed{sampler: s, x: x, labels: labels, depth: depth,
		free: make(chan *prepared, depth+hold+1), ready: make(chan *prepared, depth)}
	for range depth + hold + 1 {
		f.free <- &prepared{}
	}
	return f
}

// take returns batch index of epoch, starting the feed there if it is not
// already producing it (the first step, or after a resume). The caller
// gives it back when done with it.
func (f *feed) take(epoch, index int) (*prepared, error) {
	if !f.on || f.next.epoch != epoch || f.next.index != index {
		f.restart(epoch, index)
	}
	p := <-f.ready
	f.next.epoch, f.next.index = p.epoch, p.index+1
	if f.next.index == f.sampler.Batches() {
		f.next.epoch, f.next.index = p.epoch+1, 0
	}
	if p.err != nil {
		return p, fmt.Errorf("sampling batch %d of epoch %d: %w", index, epoch, p.err)
	}
	if p.epoch != epoch || p.index != index {
		return p, fmt.Errorf("minibatch: the feed gave batch %d of epoch %d for batch %d of epoch %d", p.index, p.epoch, index, epoch)
	}
	return p, nil
}

// give returns a batch to the feed's pool.
func (f *feed) give(p *prepared) { f.free <- p }

// restart stops the producer and starts it again at (epoch, index).
func (f *feed) restart(epoch, index int) {
	f.close()
	f.stop = make(chan struct{})
	f.on, f.next.epoch, f.next.index = true, epoch, index
	f.done.Add(1)
	go f.produce(epoch, index, f.stop)
}

// produce fills batches in order until stopped.
func (f *feed) produce(epoch, index int, stop chan struct{}) {
	defer f.done.Done()
	for {
		var p *prepared
		select {
		case p = <-f.free:
		case <-stop:
			return
		}
		f.fill(p, epoch, index)
		select {
		case f.ready <- p:
		case <-stop:
			f.free <- p
			return
		}
		if index++; index == f.sampler.Batches() {
			epoch, index = epoch+1, 0
		}
	}
}

// fill samples batch index of epoch into p and gathers its inputs.
func (f *feed) fill(p *prepared, epoch, index int) {
	p.epoch, p.index, p.err = epoch, index, nil
	start := time.Now()
	if p.err = f.sampler.Sample(epoch, index, &p.batch); p.err != nil {
		return
	}
	sampled := time.Now()
	if p.x = (nn.Features{}); !f.noX {
		p.x = f.x.prepare(&p.gather, &p.batch, f.reads, f.head)
	}
	p.labels = p.labels[:0]
	for _, v := range p.batch.Output {
		p.labels = append(p.labels, f.labels[v])
	}
	p.sampleSeconds, p.gatherSeconds = sampled.Sub(start).Seconds(), time.Since(sampled).Seconds()
}

// close stops the producer and returns every batch to the pool.
func (f *feed) close() {
	if !f.on {
		return
	}
	close(f.stop)
	f.done.Wait()
	for {
		select {
		case p := <-f.ready:
			f.free <- p
		default:
			f.on = false
			return
		}
	}
}

// release stops the producer and lets every pooled batch's buffers go:
// the next take starts it again and allocates them anew. Exact evaluation
// of a large graph calls it first, so that the batches sampled ahead (a
// few hundred megabytes each on a graph of ogbn-products' size) are not
// held beside its layers' outputs.
func (f *feed) release() {
	f.close()
	for range len(f.free) {
		p := <-f.free
		for _, b := range p.batch.Blocks {
			b.Release() // its transposes and renumbered operator leave the memory account with it
		}
		*p = prepared{labels: p.labels[:0]}
		f.free <- p
	}
}
