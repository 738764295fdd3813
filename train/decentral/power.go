package decentral

import (
	"math"
	"math/rand/v2"

	"github.com/graft-gnn/graft/graph"
)

// PowerSetup is the wireless power-allocation task (authors'
// Unrolled-WMMSE/datagen.py): transmitter–receiver pairs placed uniformly in
// a square, 3GPP UMa-optional path loss, log-normal shadowing and Rayleigh
// fading, weak links thresholded to zero.
type PowerSetup struct {
	Pairs       int     // 25
	HalfSide    float64 // metres: positions uniform in [−HalfSide, HalfSide]² (500)
	CarrierGHz  float64 // f_c (0.9)
	ShadowingDB float64 // log-normal shadowing σ, clipped at ±2σ (7.2)
	PmaxW       float64 // power budget per transmitter (5 W)
	NoiseDBm    float64 // −106.87 dBm over 5 MHz
	ThresholdDB float64 // path-loss threshold: required SNR 10 dB, control tolerance 5 dB
	Batch       int     // 64
	Batches     int     // online mini-batches of fresh channels
	Test        int     // test channel realisations
	Hidden      int
	Layers      int
	LR          float64 // 1e-2 as the authors
	EvalBatches int     // mini-batches between evaluations
}

// PowerDefaults are the authors' parameters with our training length.
func PowerDefaults() PowerSetup {
	tx := 10 * math.Log10(5/1e-3) // 5 W in dBm
	return PowerSetup{Pairs: 25, HalfSide: 500, CarrierGHz: 0.9, ShadowingDB: 7.2, PmaxW: 5,
		NoiseDBm: -106.87, ThresholdDB: tx + 106.87 - 10 + 5,
		Batch: 64, Batches: 100, Test: 200, Hidden: 32, Layers: 2, LR: 1e-2, EvalBatches: 10}
}

// pathLossDB is the UMa "optional" model: 32.4 + 20 log10 f_c + 30 log10 d.
func (s PowerSetup) pathLossDB(d float64) float64 {
	return 32.4 + 20*math.Log10(s.CarrierGHz) + 30*math.Log10(max(d, 1))
}

// powerLayout is one network: where the pairs are and who can hear whom.
type powerLayout struct {
	s      PowerSetup
	dist   [][]float64 // dist[i][j]: transmitter j to receiver i
	graph  *graph.Graph
	noiseW float64
}

func newPowerLayout(s PowerSetup, rng *rand.Rand) (*powerLayout, error) {
	n := s.Pairs
	pos := func() [2]float64 {
		return [2]float64{(2*rng.Float64() - 1) * s.HalfSide, (2*rng.Float64() - 1) * s.HalfSide}
	}
	tx, rx := make([][2]float64, n), make([][2]float64, n)
	for i := range n {
		tx[i] = pos()
	}
	for i := range n {
		rx[i] = pos()
	}
	l := &powerLayout{s: s, dist: make([][]float64, n), noiseW: math.Pow(10, (s.NoiseDBm-30)/10)}
	var src, dst []int32
	for i := range n {
		l.dist[i] = make([]float64, n)
		for j := range n {
			l.dist[i][j] = math.Hypot(rx[i][0]-tx[j][0], rx[i][1]-tx[j][1])
			// Pairs whose mean path loss is under the threshold can hear each
			// other on the control channel: that is the network.
			if i != j && s.pathLossDB(l.dist[i][j]) <= s.ThresholdDB {
				src, dst = append(src, int32(i)), append(dst, int32(j))
			}
		}
	}
	g, err := graph.FromEdges(n, src, dst, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		return nil, err
	}
	l.graph = g
	return l, nil
}

// channel draws one realisation: gain[i][j] = |h_ij|², transmitter j to
// receiver i, with shadowing, fading and thresholding.
func (l *powerLayout) channel(rng *rand.Rand) [][]float64 {
	s := l.s
	n := s.Pairs
	thr := math.Pow(10, -s.ThresholdDB/20)
	gain := make([][]float64, n)
	for i := range n {
		gain[i] = make([]float64, n)
		for j := range n {
			shadow := max(-2*s.ShadowingDB, min(2*s.ShadowingDB, s.ShadowingDB*rng.NormFloat64()))
			amp := math.Pow(10, -(s.pathLossDB(l.dist[i][j])+shadow)/20)
			// Rayleigh with scale 1/√2: |CN(0,1)|.
			fade := math.Hypot(rng.NormFloat64(), rng.NormFloat64()) / math.Sqrt2
			amp *= fade
			if amp < thr {
				amp = 0
			}
			gain[i][j] = amp * amp
		}
	}
	return gain
}

// sample turns a channel into what the agents see. Receiver i measures its
// direct gain and the interference from each neighbour; its features are
// the log SNR and log INR at full power, and its row of the shift operator
// is each neighbour's share of the interference it hears.
func (l *powerLayout) sample(gain [][]float64) Sample {
	s, g := l.s, l.graph
	n := s.Pairs
	x := make([]float64, n*2)
	sh := &Shift{Graph: g, Diag: make([]float64, n), Off: make([]float64, g.NumEdges())}
	losses := make([]LocalLoss, n)
	for i := range n {
		nbrs := g.Adj(i)
		cross := make([]float64, len(nbrs))
		interf := 0.0
		for k, j := range nbrs {
			cross[k] = gain[i][j]
			interf += gain[i][j]
		}
		x[2*i] = math.Log10(1+s.PmaxW*gain[i][i]/l.noiseW) / 5
		x[2*i+1] = math.Log10(1+s.PmaxW*interf/l.noiseW) / 5
		for k := range nbrs {
			sh.Off[g.Offsets[i]+int64(k)] = cross[k] / (l.noiseW/s.PmaxW + interf)
		}
		losses[i] = SumRateLoss{Direct: gain[i][i], Cross: cross, Noise: l.noiseW, Pmax: s.PmaxW}
	}
	return Sample{Shift: sh, X: x, Loss: losses}
}

// SumRateLoss is −log2(1 + SINR_i) for pair i transmitting at Pmax·y_i, its
// neighbours at Pmax·y_j. It is coupled: the SINR needs the neighbours'
// powers, and their gradients need i's partials.
type SumRateLoss struct {
	Direct float64   // |h_ii|²
	Cross  []float64 // |h_ij|², neighbour order
	Noise  float64   // W
	Pmax   float64   // W
}

func (SumRateLoss) Coupled() bool { return true }

func (r SumRateLoss) Eval(own []float64, nbrs [][]float64) (float64, []float64, [][]float64) {
	interf := r.Noise
	for k, y := range nbrs {
		if y != nil {
			interf += r.Cross[k] * r.Pmax * y[0]
		}
	}
	sig := r.Direct * r.Pmax * own[0]
	rate := math.Log2(1 + sig/interf)
	dOwn := []float64{-r.Direct * r.Pmax / (interf + sig) / math.Ln2}
	dNbrs := make([][]float64, len(nbrs))
	for k, y := range nbrs {
		if y != nil {
			dNbrs[k] = []float64{sig / (interf * (interf + sig)) * r.Cross[k] * r.Pmax / math.Ln2}
		}
	}
	return -rate, dOwn, dNbrs
}

// sumRate is Σ_i log2(1 + SINR_i) with the whole channel known.
func (l *powerLayout) sumRate(gain [][]float64, y []float64) float64 {
	total := 0.0
	for i := range gain {
		interf := l.noiseW
		for j := range gain {
			if j != i {
				interf += gain[i][j] * l.s.PmaxW * y[j]
			}
		}
		total += math.Log2(1 + gain[i][i]*l.s.PmaxW*y[i]/interf)
	}
	return total
}

// PowerModel maps the two link features through graph-filter layers to a
// power fraction in (0, 1).
func (s PowerSetup) PowerModel() Model {
	dims := []int{2}
	for range s.Layers - 1 {
		dims = append(dims, s.Hidden)
	}
	return Model{Dims: append(dims, 1), Hops: 1, Bias: true, Hidden: LeakyReLU, Output: Sigmoid}
}

// Power runs the unsupervised power-allocation task: mean test sum-rate of
// the distributed model against the central one, full power and random
// power.
func Power(s PowerSetup, o Options) (*Result, error) {
	layout, err := newPowerLayout(s, newRand(o.Seed, streamGraph))
	if err != nil {
		return nil, err
	}
	draw := func(count int, rng *rand.Rand) ([]Sample, [][][]float64) {
		samples, gains := make([]Sample, count), make([][][]float64, count)
		for b := range samples {
			gains[b] = layout.channel(rng)
			samples[b] = layout.sample(gains[b])
		}
		return samples, gains
	}
	train, _ := draw(s.Batch*s.Batches, newRand(o.Seed, streamData))
	test, testGains := draw(s.Test, newRand(o.Seed, streamTest))
	evaluate := func(ys [][]float64) float64 {
		sum := 0.0
		for b, y := range ys {
			sum += layout.sumRate(testGains[b], y)
		}
		return sum / float64(len(ys))
	}
	full, random := make([][]float64, s.Test), make([][]float64, s.Test)
	rng := newRand(o.Seed, streamExplore)
	for b := range full {
		full[b], random[b] = make([]float64, s.Pairs), make([]float64, s.Pairs)
		for i := range s.Pairs {
			full[b][i], random[b][i] = 1, rng.Float64()
		}
	}
	t := offline{
		name: "power", metric: "sum_rate", model: s.PowerModel(), graph: layout.graph,
		train: train, test: test, batch: s.Batch, epochs: 1, lr: s.LR, evalEvery: s.EvalBatches,
		evaluate:  evaluate,
		baselines: map[string]float64{"full_power": evaluate(full), "random_power": evaluate(random)},
	}
	return runOffline(t, o)
}

// PowerQuick is a small version for tests.
func PowerQuick() PowerSetup {
	s := PowerDefaults()
	s.Pairs, s.Batch, s.Batches, s.Test, s.EvalBatches = 10, 16, 60, 40, 20
	return s
}
