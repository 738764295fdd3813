package decentral

// A sweep is one sample's forward or backward pass as seen by one agent: a
// sequence of rounds, each of which sends one message to every neighbour and
// consumes theirs, with local work in between. Splitting a pass into rounds
// this way lets the agent run a forward and a backward sweep in the same
// round, which is all piggybacking is.
type sweep interface {
	done() bool
	// outgoing returns this round's message for each neighbour, in
	// neighbour order; entries may share storage.
	outgoing() [][]float64
	// incoming consumes this round's messages (nil when lost) and does the
	// local work up to the next round.
	incoming(in [][]float64)
}

// localSample is what agent i observes of one sample: its row of the shift
// operator, its input features and its loss term.
type localSample struct {
	diag float64
	off  []float64 // S_ij for the agent's neighbours, in neighbour order
	x    []float64
	loss LocalLoss
}

// forwardSweep evaluates the model at one node: K rounds per layer, each
// sending the node's current shifted input and mixing the neighbours' with
// the node's row of S; one more round exchanging outputs if the loss is
// coupled. It keeps every intermediate value for the backward sweep.
type forwardSweep struct {
	m        Model
	params   []float64
	smp      *localSample
	nbrs     int
	evalLoss bool

	layer, hop int
	p          [][][]float64 // p[l][k] = (S^k H_l)_i
	z, h       [][]float64   // h[l] input of layer l; h[L] the output
	readout    bool          // in the extra round of a coupled loss
	finished   bool

	loss  float64
	dOwn  []float64
	dNbrs [][]float64
}

func newForwardSweep(m Model, params []float64, smp *localSample, nbrs int, evalLoss bool) *forwardSweep {
	L := m.Layers()
	f := &forwardSweep{m: m, params: params, smp: smp, nbrs: nbrs, evalLoss: evalLoss,
		p: make([][][]float64, L), z: make([][]float64, L), h: make([][]float64, L+1), hop: 1}
	f.h[0] = smp.x
	f.p[0] = [][]float64{smp.x}
	return f
}

func (f *forwardSweep) done() bool { return f.finished }

func (f *forwardSweep) outgoing() [][]float64 {
	var msg []float64
	if f.readout {
		msg = f.h[f.m.Layers()]
	} else {
		msg = f.p[f.layer][f.hop-1]
	}
	return broadcast(msg, f.nbrs)
}

func (f *forwardSweep) incoming(in [][]float64) {
	if f.readout {
		f.loss, f.dOwn, f.dNbrs = f.smp.loss.Eval(f.output(), in)
		f.finished = true
		return
	}
	l := f.layer
	prev := f.p[l][f.hop-1]
	next := make([]float64, len(prev))
	axpy(next, f.smp.diag, prev)
	for k, msg := range in {
		if msg != nil {
			axpy(next, f.smp.off[k], msg)
		}
	}
	f.p[l] = append(f.p[l], next)
	if f.hop < f.m.Hops {
		f.hop++
		return
	}
	// Layer l has all its taps: finish it locally.
	out := f.m.Dims[l+1]
	taps, bias := f.m.layerParams(f.params, l)
	z := make([]float64, out)
	if bias != nil {
		copy(z, bias)
	}
	for k, w := range taps {
		vecMat(z, f.p[l][k], w)
	}
	act := f.m.activation(l)
	h := make([]float64, out)
	for j, v := range z {
		h[j] = act.apply(v)
	}
	f.z[l], f.h[l+1] = z, h
	f.layer, f.hop = l+1, 1
	if f.layer < f.m.Layers() {
		f.p[f.layer] = [][]float64{h}
		return
	}
	switch {
	case !f.evalLoss:
		f.finished = true
	case f.smp.loss.Coupled():
		f.readout = true
	default:
		f.loss, f.dOwn, f.dNbrs = f.smp.loss.Eval(h, nil)
		f.finished = true
	}
}

func (f *forwardSweep) output() []float64 { return f.h[f.m.Layers()] }

// backwardSweep runs the backward pass of a finished forward sweep at one
// node, adding the node's share of the parameter gradient to grad. Its
// messages are the terms each neighbour needs to form its own input
// gradient: a coupled loss's partials first, then for every layer but the
// first, K rounds of Horner's rule for Σ_k (Sᵀ)^k dZ W_kᵀ, where node i
// sends S_ij·u_i to neighbour j (only i knows S_ij).
type backwardSweep struct {
	fw   *forwardSweep
	grad []float64

	readout  bool // exchanging the coupled loss's partials
	layer    int  // the layer whose input gradient is being formed
	hop      int  // next tap folded in by Horner's rule
	dz       []float64
	u        []float64
	finished bool
}

func newBackwardSweep(fw *forwardSweep, grad []float64) *backwardSweep {
	b := &backwardSweep{fw: fw, grad: grad}
	if fw.smp.loss.Coupled() {
		b.readout = true
		return b
	}
	b.enterLayer(fw.m.Layers()-1, fw.dOwn)
	return b
}

func (b *backwardSweep) done() bool { return b.finished }

// enterLayer turns the output gradient dh of layer l into dZ, adds the
// layer's parameter gradient, and starts forming its input gradient.
func (b *backwardSweep) enterLayer(l int, dh []float64) {
	m := b.fw.m
	act := m.activation(l)
	dz := make([]float64, len(dh))
	for j := range dz {
		dz[j] = dh[j] * act.derivative(b.fw.z[l][j], b.fw.h[l+1][j])
	}
	gtaps, gbias := m.layerParams(b.grad, l)
	for k := range gtaps {
		outerAdd(gtaps[k], b.fw.p[l][k], dz)
	}
	if gbias != nil {
		axpy(gbias, 1, dz)
	}
	if l == 0 {
		b.finished = true
		return
	}
	taps, _ := m.layerParams(b.fw.params, l)
	b.layer, b.dz, b.hop = l, dz, m.Hops-1
	b.u = make([]float64, m.Dims[l])
	matVec(b.u, taps[m.Hops], dz)
}

func (b *backwardSweep) outgoing() [][]float64 {
	if b.readout {
		out := make([][]float64, b.fw.nbrs)
		for k := range out {
			if k < len(b.fw.dNbrs) {
				out[k] = b.fw.dNbrs[k]
			}
			if out[k] == nil {
				out[k] = make([]float64, len(b.fw.dOwn))
			}
		}
		return out
	}
	out := make([][]float64, b.fw.nbrs)
	for k := range out {
		msg := make([]float64, len(b.u))
		axpy(msg, b.fw.smp.off[k], b.u)
		out[k] = msg
	}
	return out
}

func (b *backwardSweep) incoming(in [][]float64) {
	if b.readout {
		dh := append([]float64(nil), b.fw.dOwn...)
		for _, msg := range in {
			if msg != nil {
				axpy(dh, 1, msg)
			}
		}
		b.readout = false
		b.enterLayer(b.fw.m.Layers()-1, dh)
		return
	}
	next := make([]float64, len(b.u))
	axpy(next, b.fw.smp.diag, b.u)
	for _, msg := range in {
		if msg != nil {
			axpy(next, 1, msg)
		}
	}
	taps, _ := b.fw.m.layerParams(b.fw.params, b.layer)
	matVec(next, taps[b.hop], b.dz)
	b.u = next
	if b.hop > 0 {
		b.hop--
		return
	}
	b.enterLayer(b.layer-1, b.u)
}

func broadcast(msg []float64, nbrs int) [][]float64 {
	out := make([][]float64, nbrs)
	for k := range out {
		out[k] = msg
	}
	return out
}
