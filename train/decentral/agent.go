package decentral

import (
	"slices"
	"sync/atomic"
)

// message is what crosses one link in one round. A lost message still
// arrives, marked lost, standing in for the receiver's timeout: rounds stay
// synchronous without a global clock.
type message struct {
	payload []float64
	lost    bool
}

// port is an agent's view of the network: its neighbours' ids, the links
// to and from each (same order) and its row of the consensus weights.
type port struct {
	nbrs    []int32
	in      []<-chan message
	out     []chan<- message
	mixSelf float64
	mixOff  []float64
}

// traffic counts what crosses the links. Agents only add to it.
type traffic struct {
	messages, values atomic.Int64
}

// command is what the runtime asks of one agent; report is the answer.
type command struct {
	kind      commandKind
	samples   []*localSample // nil: the agent takes no part (not in this network)
	piggyback bool
	round     int   // the network's round counter when the command starts
	port      *port // for commandRewire
}

type commandKind int

const (
	commandTrain    commandKind = iota // gradient, consensus round, local step
	commandGradient                    // gradient only, reported
	commandPredict                     // forward only, outputs reported
	commandParams                      // report parameters
	commandRewire                      // take a new port
)

type report struct {
	loss    float64 // Σ_b f_i over the batch
	rounds  int
	away    bool // off the network for part of the batch, so no update
	grad    []float64
	outputs [][]float64
	params  []float64
}

// agent is one network node. Its fields are touched only by its own
// goroutine (run): other agents see it only through the messages it sends,
// and the runtime only through commands and reports.
type agent struct {
	id      int
	model   Model
	params  []float64
	opt     optState
	port    *port
	faults  *Faults
	traffic *traffic
	round   int // the network's round counter, the same at every agent
}

func (a *agent) run(commands <-chan command, reports chan<- report) {
	for cmd := range commands {
		reports <- a.handle(cmd)
	}
}

func (a *agent) handle(cmd command) report {
	a.round = cmd.round
	switch cmd.kind {
	case commandRewire:
		a.port = cmd.port
		return report{}
	case commandParams:
		return report{params: append([]float64(nil), a.params...)}
	case commandPredict:
		return a.predict(cmd.samples)
	}
	if cmd.samples == nil {
		return report{}
	}
	start := a.round
	grad, loss := a.gradient(cmd.samples, cmd.piggyback)
	if cmd.kind == commandGradient {
		return report{loss: loss, rounds: a.round - start, grad: grad}
	}
	mixed, mixedGrad := a.mix(grad)
	for r := start; r < a.round; r++ {
		if a.faults.away(a.id, r) {
			// It was not there to train: it keeps what it had.
			return report{loss: loss, rounds: a.round - start, away: true}
		}
	}
	a.opt.step(a.params, mixed, mixedGrad)
	return report{loss: loss, rounds: a.round - start}
}

// mix runs the consensus round. Each agent sends its parameters and its
// local gradient in one message and forms Σ_j c_ij x_j and Σ_j c_ij g_j over
// the neighbours heard from; a lost message's weight stays on the agent's
// own copy so the weights still sum to one. Mixing the gradients as well
// keeps adaptive rules stable: an agent's own share of the gradient can be
// far from the average, and Adam would normalise each share on its own.
func (a *agent) mix(grad []float64) (params, gradient []float64) {
	p := a.port
	n := len(a.params)
	msg := append(slices.Clone(a.params), grad...)
	in := a.exchange(broadcast(msg, len(p.nbrs)))
	mixed := make([]float64, 2*n)
	self := p.mixSelf
	for k, m := range in {
		if m == nil {
			self += p.mixOff[k]
			continue
		}
		axpy(mixed, p.mixOff[k], m)
	}
	axpy(mixed, self, msg)
	return mixed[:n], mixed[n:]
}

// predict runs forward sweeps only and reports the outputs.
func (a *agent) predict(samples []*localSample) report {
	if samples == nil {
		return report{}
	}
	start := a.round
	outs := make([][]float64, len(samples))
	for b, smp := range samples {
		fw := newForwardSweep(a.model, a.params, smp, len(a.port.nbrs), false)
		a.drive(fw)
		outs[b] = fw.output()
	}
	return report{rounds: a.round - start, outputs: outs}
}

// exchange runs one round: one message to every neighbour, one from each.
func (a *agent) exchange(out [][]float64) [][]float64 {
	r := a.round
	a.round++
	p := a.port
	for k, ch := range p.out {
		// A message is a copy: the sender may reuse its buffers.
		msg := message{payload: append([]float64(nil), out[k]...)}
		msg.lost = a.faults.lost(r, a.id, int(p.nbrs[k]))
		if msg.lost {
			msg.payload = nil
		}
		a.traffic.messages.Add(1)
		a.traffic.values.Add(int64(len(out[k])))
		ch <- msg
	}
	in := make([][]float64, len(p.in))
	for k, ch := range p.in {
		if m := <-ch; !m.lost {
			in[k] = m.payload
		}
	}
	return in
}

// gradient runs the forward and backward sweeps of every sample and
// returns the agent's share of the mini-batch gradient (divided by the
// batch size) and its summed loss. With piggybacking the backward sweep of
// sample b−1 rides on the forward sweep of sample b, so the batch costs
// B·F + Bw rounds instead of B·(F + Bw) (F forward, Bw backward rounds).
func (a *agent) gradient(samples []*localSample, piggyback bool) ([]float64, float64) {
	grad := make([]float64, len(a.params))
	loss := 0.0
	nbrs := len(a.port.nbrs)
	var pending *backwardSweep
	for _, smp := range samples {
		fw := newForwardSweep(a.model, a.params, smp, nbrs, true)
		if !piggyback {
			a.drive(fw)
		} else {
			for !fw.done() {
				if pending != nil && pending.done() {
					pending = nil
				}
				if pending == nil {
					fw.incoming(a.exchange(fw.outgoing()))
					continue
				}
				// One message per neighbour carries both parts; the
				// receiver splits at the forward part's length, which
				// every agent knows from the model's widths.
				fo, bo := fw.outgoing(), pending.outgoing()
				width := 0
				if nbrs > 0 {
					width = len(fo[0])
				}
				out := make([][]float64, nbrs)
				for k := range out {
					out[k] = append(append(make([]float64, 0, width+len(bo[k])), fo[k]...), bo[k]...)
				}
				in := a.exchange(out)
				fin, bin := make([][]float64, nbrs), make([][]float64, nbrs)
				for k, msg := range in {
					if msg != nil {
						fin[k], bin[k] = msg[:width], msg[width:]
					}
				}
				fw.incoming(fin)
				pending.incoming(bin)
			}
			if pending != nil {
				a.drive(pending) // only when backward outlasts forward
			}
		}
		loss += fw.loss
		bw := newBackwardSweep(fw, grad)
		if piggyback {
			pending = bw
		} else {
			a.drive(bw)
		}
	}
	if pending != nil {
		a.drive(pending)
	}
	scale := 1 / float64(len(samples))
	for i := range grad {
		grad[i] *= scale
	}
	return grad, loss
}

// drive runs a sweep alone until it is done.
func (a *agent) drive(s sweep) {
	for !s.done() {
		s.incoming(a.exchange(s.outgoing()))
	}
}
