package optim

// CatchUpStep is Step for gradients that arrive sparsely, each
// coordinate's gradient of several steps in one sum, as a top-k exchange
// with error feedback delivers them. A coordinate whose gradient is zero
// is left as it is, its buffers too; one whose gradient is not first
// takes the steps it missed since its last update, with the arrived sum
// spread evenly over them: a coordinate last updated a steps ago takes a
// steps of grad/a, each at its own step's learning rate lr(k) and bias
// correction. A coordinate that receives a·g every a steps thus moves as
// under Step with g at every step. Applying the sum as one step instead
// would move an Adam coordinate far too little: Adam normalises each step
// by the gradient's recent magnitude, so a sum of a steps' gradients
// moves it by about one step's worth where a steps of g move it a.
//
// x is updated in place (base is x). lr(k) is the learning rate of step k
// (1 for the first). It panics without Config.CatchUp, a program error.
func (s *State[T]) CatchUpStep(x, grad []T, lr func(step int) float64, decay float64) {
	if s.lastStep == nil {
		panic("optim: CatchUpStep without Config.CatchUp")
	}
	grad = grad[:len(x)]
	s.Steps++
	now := s.Steps
	for j, g := range grad {
		if g == 0 {
			continue
		}
		from := int(s.lastStep[j])
		d := float64(g) / float64(now-from)
		for k := from + 1; k <= now; k++ {
			if s.cfg.Rule == SGD {
				x[j] = T(s.sgdCoordinate(j, float64(x[j]), d, lr(k), decay, k))
			} else {
				x[j] = T(s.adamCoordinate(j, float64(x[j]), d, lr(k), decay, s.adamCorrection(k)))
			}
		}
		s.lastStep[j] = T(now)
	}
}
