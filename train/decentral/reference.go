package decentral

import (
	"fmt"
)

// trace keeps what the backward pass reuses from the forward pass: for each
// layer l the shifted inputs p[l][k] = S^k H_l and the pre-activations z[l],
// and the outputs h (N×Dims[L]).
type trace struct {
	p [][][]float64
	z [][]float64
	h [][]float64 // h[l] is the input to layer l; h[L] the output
}

// forward evaluates the model on the whole graph at once, the way a central
// server would. It is the reference the agents' message passing must match.
func (m Model) forward(params []float64, s *Shift, x []float64) *trace {
	n := s.Graph.N
	L := m.Layers()
	tr := &trace{p: make([][][]float64, L), z: make([][]float64, L), h: make([][]float64, L+1)}
	tr.h[0] = x
	for l := range L {
		in, out := m.Dims[l], m.Dims[l+1]
		taps, bias := m.layerParams(params, l)
		p := make([][]float64, m.Hops+1)
		p[0] = tr.h[l]
		for k := 1; k <= m.Hops; k++ {
			p[k] = s.apply(p[k-1], in)
		}
		z := make([]float64, n*out)
		for i := range n {
			zi := z[i*out : (i+1)*out]
			if bias != nil {
				copy(zi, bias)
			}
			for k, w := range taps {
				vecMat(zi, p[k][i*in:(i+1)*in], w)
			}
		}
		act := m.activation(l)
		h := make([]float64, len(z))
		for i, v := range z {
			h[i] = act.apply(v)
		}
		tr.p[l], tr.z[l], tr.h[l+1] = p, z, h
	}
	return tr
}

// backward adds to grad the gradient of Σ_i dOut_i·y_i through the model.
func (m Model) backward(params []float64, s *Shift, tr *trace, dOut, grad []float64) {
	n := s.Graph.N
	dh := dOut
	for l := m.Layers() - 1; l >= 0; l-- {
		in, out := m.Dims[l], m.Dims[l+1]
		act := m.activation(l)
		dz := make([]float64, len(dh))
		for i := range dz {
			dz[i] = dh[i] * act.derivative(tr.z[l][i], tr.h[l+1][i])
		}
		taps, _ := m.layerParams(params, l)
		gtaps, gbias := m.layerParams(grad, l)
		for i := range n {
			dzi := dz[i*out : (i+1)*out]
			for k := range taps {
				outerAdd(gtaps[k], tr.p[l][k][i*in:(i+1)*in], dzi)
			}
			if gbias != nil {
				axpy(gbias, 1, dzi)
			}
		}
		if l == 0 {
			break
		}
		// dH = Σ_k (Sᵀ)^k dZ W_kᵀ, by Horner's rule from the highest tap.
		u := make([]float64, n*in)
		for k := m.Hops; k >= 0; k-- {
			if k < m.Hops {
				u = s.applyTranspose(u, in)
			}
			for i := range n {
				matVec(u[i*in:(i+1)*in], taps[k], dz[i*out:(i+1)*out])
			}
		}
		dh = u
	}
}

// centralLoss sums the nodes' loss terms of one sample and returns the
// gradient with respect to every node's output.
func centralLoss(losses []LocalLoss, s *Shift, y []float64, width int) (float64, []float64) {
	g := s.Graph
	total, dOut := 0.0, make([]float64, len(y))
	for i := range g.N {
		if losses[i] == nil {
			continue // not taking part
		}
		var nbrs [][]float64
		if losses[i].Coupled() {
			for _, j := range g.Adj(i) {
				nbrs = append(nbrs, y[int(j)*width:(int(j)+1)*width])
			}
		}
		loss, dOwn, dNbrs := losses[i].Eval(y[i*width:(i+1)*width], nbrs)
		total += loss
		axpy(dOut[i*width:(i+1)*width], 1, dOwn)
		for k, j := range g.Adj(i) {
			if k < len(dNbrs) && dNbrs[k] != nil {
				axpy(dOut[int(j)*width:(int(j)+1)*width], 1, dNbrs[k])
			}
		}
	}
	return total, dOut
}

// Gradient returns the loss of a mini-batch, (1/(N·B)) Σ_b Σ_i f_i, and its
// gradient, computed centrally. It is what a server holding the whole graph
// would compute, and what exact consensus over the agents must reproduce.
func (m Model) Gradient(params []float64, batch []Sample) (float64, []float64, error) {
	grad := make([]float64, len(params))
	total := 0.0
	if len(batch) == 0 {
		return 0, grad, fmt.Errorf("decentral: empty mini-batch")
	}
	n := batch[0].Shift.Graph.N
	for _, smp := range batch {
		if err := m.checkSample(smp); err != nil {
			return 0, nil, err
		}
		tr := m.forward(params, smp.Shift, smp.X)
		loss, dOut := centralLoss(smp.Loss, smp.Shift, tr.h[m.Layers()], m.Dims[m.Layers()])
		total += loss
		m.backward(params, smp.Shift, tr, dOut, grad)
	}
	scale := 1 / float64(n*len(batch))
	for i := range grad {
		grad[i] *= scale
	}
	return total * scale, grad, nil
}

// Predict returns the model's outputs on one sample, N×Dims[L].
func (m Model) Predict(params []float64, smp Sample) []float64 {
	return m.forward(params, smp.Shift, smp.X).h[m.Layers()]
}

func (m Model) checkSample(s Sample) error {
	if s.Shift == nil || s.Shift.Graph == nil {
		return fmt.Errorf("decentral: sample without a shift operator")
	}
	n := s.Shift.Graph.N
	if len(s.X) != n*m.Dims[0] {
		return fmt.Errorf("decentral: sample has %d feature values, want %d nodes × %d", len(s.X), n, m.Dims[0])
	}
	if s.Loss != nil && len(s.Loss) != n {
		return fmt.Errorf("decentral: sample has %d loss terms for %d nodes", len(s.Loss), n)
	}
	return nil
}
