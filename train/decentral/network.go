package decentral

import (
	"errors"
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/graph"
)

// BytesPerValue is the wire size of one message entry: agents compute and
// send float64.
const BytesPerValue = 8

// Config describes a network of agents.
type Config struct {
	Model     Model
	Graph     *graph.Graph // the communication graph: undirected, no self loops
	Optimizer Optimizer
	Piggyback bool
	Faults    *Faults
	// Params are every agent's initial parameters (each agent copies them);
	// nil draws them from Model.Init with a fixed seed.
	Params []float64
}

// Stats measures one command across the whole network.
type Stats struct {
	Loss     float64 // (1/(N·B)) Σ_b Σ_i f_i, as each agent evaluated it
	Rounds   int     // rounds of message passing (every agent runs the same)
	Messages int64   // messages sent, lost ones included
	Bytes    int64   // payload bytes sent
	Away     int     // agents that skipped their update because they were off the network
}

// Network runs one agent per node as a goroutine. The runtime owns the
// links (one buffered channel per direction of every edge) and talks to
// each agent only through its command and report channels; agents talk
// only through the links. Methods must be called from one goroutine.
type Network struct {
	model     Model
	graph     *graph.Graph
	piggyback bool
	commands  []chan command
	reports   []chan report
	traffic   *traffic
	round     int // rounds run so far, the clock faults are scheduled on
	closed    bool
}

// New starts the agents.
func New(cfg Config) (*Network, error) {
	if err := cfg.Model.Validate(); err != nil {
		return nil, err
	}
	ports, err := buildPorts(cfg.Graph)
	if err != nil {
		return nil, err
	}
	params := cfg.Params
	if params == nil {
		params = cfg.Model.Init(newRand(1, 0))
	}
	if len(params) != cfg.Model.NumParams() {
		return nil, fmt.Errorf("decentral: %d initial parameters for a model with %d", len(params), cfg.Model.NumParams())
	}
	if err := cfg.Faults.check(cfg.Graph); err != nil {
		return nil, err
	}
	if err := cfg.Optimizer.config().Check(); err != nil {
		return nil, err
	}
	n := &Network{model: cfg.Model, graph: cfg.Graph, piggyback: cfg.Piggyback, traffic: new(traffic)}
	for i := range cfg.Graph.N {
		a := &agent{
			id:      i,
			model:   cfg.Model,
			params:  slices.Clone(params),
			opt:     newOptState(cfg.Optimizer, len(params)),
			port:    ports[i],
			faults:  cfg.Faults,
			traffic: n.traffic,
		}
		cmds, reps := make(chan command), make(chan report)
		n.commands, n.reports = append(n.commands, cmds), append(n.reports, reps)
		go a.run(cmds, reps)
	}
	return n, nil
}

// buildPorts makes one channel per direction of every edge and hands each
// agent the ends it owns.
func buildPorts(g *graph.Graph) ([]*port, error) {
	mix, err := MetropolisHastings(g)
	if err != nil {
		return nil, err
	}
	links := make([]chan message, g.NumEdges()) // links[e] carries edge e = (i, j) from i to j
	for e := range links {
		links[e] = make(chan message, 1)
	}
	ports := make([]*port, g.N)
	for i := range g.N {
		p := &port{nbrs: g.Adj(i), mixSelf: mix.Diag[i]}
		_, p.mixOff = mix.row(i)
		for e := g.Offsets[i]; e < g.Offsets[i+1]; e++ {
			j := g.Neighbors[e]
			back, _ := slices.BinarySearch(g.Adj(int(j)), int32(i))
			p.out = append(p.out, links[e])
			p.in = append(p.in, links[g.Offsets[j]+int64(back)])
		}
		ports[i] = p
	}
	return ports, nil
}

// Rewire moves the agents onto a new communication graph on the same nodes,
// as when a wireless network's links change; each agent keeps its state.
func (n *Network) Rewire(g *graph.Graph) error {
	if g == nil || g.N != n.graph.N {
		return fmt.Errorf("decentral: rewiring %d agents needs a graph on %d nodes", n.graph.N, n.graph.N)
	}
	ports, err := buildPorts(g)
	if err != nil {
		return err
	}
	cmds := make([]command, g.N)
	for i := range cmds {
		cmds[i] = command{kind: commandRewire, port: ports[i]}
	}
	if _, err := n.do(cmds); err != nil {
		return err
	}
	n.graph = g
	return nil
}

var errClosed = errors.New("decentral: network is closed")

// do sends every agent its command and collects the reports.
func (n *Network) do(cmds []command) ([]report, error) {
	if n.closed {
		return nil, errClosed
	}
	for i, c := range cmds {
		c.round = n.round
		n.commands[i] <- c
	}
	reps := make([]report, len(cmds))
	for i := range reps {
		reps[i] = <-n.reports[i]
	}
	return reps, nil
}

// split hands every agent its local view of each sample. A node whose loss
// term is nil takes no part.
func (n *Network) split(batch []Sample, kind commandKind) ([]command, error) {
	if len(batch) == 0 {
		return nil, fmt.Errorf("decentral: empty mini-batch")
	}
	g := n.graph
	cmds := make([]command, g.N)
	for i := range cmds {
		cmds[i] = command{kind: kind, piggyback: n.piggyback}
	}
	in := n.model.Dims[0]
	for b, smp := range batch {
		if err := n.model.checkSample(smp); err != nil {
			return nil, fmt.Errorf("sample %d: %w", b, err)
		}
		if !sameTopology(smp.Shift.Graph, g) {
			return nil, fmt.Errorf("decentral: sample %d's shift operator is on a different graph than the network", b)
		}
		for i := range g.N {
			if smp.Loss != nil && smp.Loss[i] == nil {
				continue
			}
			ls := &localSample{x: smp.X[i*in : (i+1)*in]}
			ls.diag, ls.off = smp.Shift.row(i)
			if smp.Loss != nil {
				ls.loss = smp.Loss[i]
			}
			cmds[i].samples = append(cmds[i].samples, ls)
		}
	}
	for i := range cmds {
		if cmds[i].samples != nil && len(cmds[i].samples) != len(batch) {
			return nil, fmt.Errorf("decentral: node %d takes part in only some samples of a mini-batch", i)
		}
	}
	return cmds, nil
}

func sameTopology(a, b *graph.Graph) bool {
	return a == b || (a.N == b.N && slices.Equal(a.Offsets, b.Offsets) && slices.Equal(a.Neighbors, b.Neighbors))
}

// run executes cmds and measures them.
func (n *Network) run(cmds []command, batch int) ([]report, Stats, error) {
	msgs, vals := n.traffic.messages.Load(), n.traffic.values.Load()
	reps, err := n.do(cmds)
	if err != nil {
		return nil, Stats{}, err
	}
	var st Stats
	active := 0
	for i, r := range reps {
		st.Loss += r.loss
		st.Rounds = max(st.Rounds, r.rounds)
		if r.away {
			st.Away++
		}
		if cmds[i].samples != nil {
			active++
		}
	}
	if active > 0 {
		st.Loss /= float64(active * batch)
	}
	n.round += st.Rounds
	st.Messages = n.traffic.messages.Load() - msgs
	st.Bytes = (n.traffic.values.Load() - vals) * BytesPerValue
	return reps, st, nil
}

// Train runs one mini-batch: every agent computes its local gradient by
// message passing, mixes its parameters with its neighbours' in one
// consensus round and takes a local optimiser step.
func (n *Network) Train(batch []Sample) (Stats, error) {
	cmds, err := n.split(batch, commandTrain)
	if err != nil {
		return Stats{}, err
	}
	_, st, err := n.run(cmds, len(batch))
	return st, err
}

// Gradients runs the forward and backward passes of a mini-batch without
// updating and returns each agent's local gradient: its share of ∇ Σ_i f_i.
// Their average is the central gradient when all agents hold the same
// parameters; that is what exact consensus would compute.
func (n *Network) Gradients(batch []Sample) ([][]float64, Stats, error) {
	cmds, err := n.split(batch, commandGradient)
	if err != nil {
		return nil, Stats{}, err
	}
	reps, st, err := n.run(cmds, len(batch))
	if err != nil {
		return nil, st, err
	}
	grads := make([][]float64, len(reps))
	for i, r := range reps {
		grads[i] = r.grad
	}
	return grads, st, nil
}

// Predict runs distributed inference, every agent with its own parameters,
// and returns each sample's outputs (N×Dims[L], zero for absent nodes).
func (n *Network) Predict(samples []Sample) ([][]float64, Stats, error) {
	cmds, err := n.split(samples, commandPredict)
	if err != nil {
		return nil, Stats{}, err
	}
	reps, st, err := n.run(cmds, len(samples))
	if err != nil {
		return nil, st, err
	}
	out := n.model.Dims[n.model.Layers()]
	ys := make([][]float64, len(samples))
	for b := range ys {
		ys[b] = make([]float64, n.graph.N*out)
		for i, r := range reps {
			if r.outputs != nil {
				copy(ys[b][i*out:], r.outputs[b])
			}
		}
	}
	return ys, st, nil
}

// Params returns a copy of every agent's parameters, as each reports them.
func (n *Network) Params() ([][]float64, error) {
	cmds := make([]command, n.graph.N)
	for i := range cmds {
		cmds[i].kind = commandParams
	}
	reps, err := n.do(cmds)
	if err != nil {
		return nil, err
	}
	ps := make([][]float64, len(reps))
	for i, r := range reps {
		ps[i] = r.params
	}
	return ps, nil
}

// Close stops the agents.
func (n *Network) Close() {
	if n.closed {
		return
	}
	n.closed = true
	for _, c := range n.commands {
		close(c)
	}
}
