package fullgraph

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
)

// Rebalance re-partitions the graph during training when the workers'
// measured compute time is imbalanced (Options.Rebalance).
//
// After one epoch on a layout (not measured: first epochs allocate), every
// worker sums each worker's compute time over Window epochs; all of them
// see the same gathered times, so they decide alike. When max/mean over
// the window exceeds Threshold, they fit a Cost to the times and the parts'
// nodes and edges, rank 0 re-partitions with Partitioner and node weights
// from that cost, and every worker rebuilds its part and halo exchange and
// continues with the same model, optimiser and reducer. It happens at most
// Max times, and not again once a re-partition did not lower the measured
// imbalance.
type Rebalance struct {
	Threshold   float64 // max/mean of the workers' compute time that triggers a re-partition (above 1)
	Partitioner partition.Partitioner
	Seed        uint64
	// Window is the number of epochs measured per decision (0:
	// DefaultWindow); Max bounds the re-partitions (0: DefaultMaxRebalances).
	Window, Max int
	// Measure, if set, replaces each epoch's measured compute seconds of
	// every worker, given the layout that epoch trained on: tests make
	// the decisions deterministic with it.
	Measure func(epoch int, layout *partition.Layout, measured []float64) []float64
	// Report, if set, receives every re-partition when it is made and
	// again once the window after it has been measured; and, restored,
	// those of the checkpoint a run resumes from, before its first epoch.
	Report func(r Record, restored bool)
}

// Defaults of Rebalance.
const (
	DefaultWindow        = 3
	DefaultMaxRebalances = 3
)

// Record is one re-partition.
type Record struct {
	Epoch int `json:"epoch"` // made after this epoch
	// ImbalanceBefore is max/mean of the workers' compute time over the
	// epochs WindowBefore (first and last) that decided it;
	// ImbalanceAfter over the window after it (absent until measured).
	ImbalanceBefore float64 `json:"imbalance_before"`
	WindowBefore    []int   `json:"window_before"`
	ImbalanceAfter  float64 `json:"imbalance_after,omitempty"`
	WindowAfter     []int   `json:"window_after,omitempty"`
	// ImbalancePredicted is what the fitted cost predicts for the new
	// partition. A partition that the cost does not predict to be better
	// than the old one is not taken: NodesMoved is then 0.
	ImbalancePredicted float64 `json:"imbalance_predicted"`
	NodesMoved         int     `json:"nodes_moved"`
	Cost               Cost    `json:"cost"`
	PartNodes          []int   `json:"part_nodes"` // owned nodes per worker after it
}

// rebalanceSite is where rank 0 sends the others the new assignment.
const rebalanceSite = "rebalance.assignment"

// rebalancer is one worker's side of Rebalance.
type rebalancer struct {
	cfg     Rebalance
	c       comm.Communicator
	p       train.Problem
	hc      halo.Config // the exchange's codec and schedule, which a new exchange keeps
	layout  *partition.Layout
	records []Record
	layouts *sharedLayouts // nil: this worker builds its own
	last    int            // the run's last epoch, after which nothing is re-partitioned

	onLayout int       // epochs trained on the current layout
	sum      []float64 // each worker's seconds over the window so far
	from, n  int       // the window's first epoch and length so far
}

func newRebalancer(cfg Rebalance, c comm.Communicator, p train.Problem, hc halo.Config, layout *partition.Layout, records []Record, layouts *sharedLayouts) (*rebalancer, error) {
	switch {
	case !(cfg.Threshold > 1):
		return nil, fmt.Errorf("fullgraph: rebalance threshold %v: want a max/mean above 1", cfg.Threshold)
	case cfg.Partitioner == nil:
		return nil, errors.New("fullgraph: rebalancing needs a partitioner")
	case p.Graph == nil || p.Graph.N != layout.N:
		return nil, errors.New("fullgraph: rebalancing needs the whole graph on every worker")
	case hc.Codec != nil && hc.Codec.Caps().Streaming != nil:
		return nil, fmt.Errorf("fullgraph: the %s codec keeps state per pair of workers, which a new partition does not carry; it cannot rebalance", hc.Codec.Name())
	}
	cfg.Window = cmp.Or(max(cfg.Window, 0), DefaultWindow)
	cfg.Max = cmp.Or(max(cfg.Max, 0), DefaultMaxRebalances)
	r := &rebalancer{cfg: cfg, c: c, p: p, hc: hc, layout: layout, records: records, layouts: layouts, sum: make([]float64, layout.K)}
	for _, rec := range records {
		if cfg.Report != nil {
			cfg.Report(rec, true)
		}
	}
	return r, nil
}

func (r *rebalancer) report(rec Record) {
	if r.cfg.Report != nil {
		r.cfg.Report(rec, false)
	}
}

// observe adds epoch's compute seconds of every worker and reports whether
// the graph is due to be re-partitioned.
func (r *rebalancer) observe(epoch int, measured []float64) bool {
	times := measured
	if r.cfg.Measure != nil {
		times = r.cfg.Measure(epoch, r.layout, measured)
	}
	if r.onLayout++; r.onLayout == 1 || len(times) != len(r.sum) {
		return false
	}
	if r.n == 0 {
		r.from = epoch
		clear(r.sum)
	}
	for w, t := range times {
		r.sum[w] += t
	}
	if r.n++; r.n < r.cfg.Window {
		return false
	}
	r.n = 0
	imb := Imbalance(r.sum)
	last := len(r.records) - 1
	if last >= 0 && r.records[last].WindowAfter == nil {
		r.records[last].ImbalanceAfter, r.records[last].WindowAfter = imb, []int{r.from, epoch}
		r.report(r.records[last])
	}
	helped := last < 0 || r.records[last].ImbalanceAfter < r.records[last].ImbalanceBefore
	return imb > r.cfg.Threshold && len(r.records) < r.cfg.Max && helped && epoch < r.last
}

// repartition fits the cost of the window just measured, has rank 0
// re-partition with it and send the result, and returns the new layout
// (nil when the old one is kept).
func (r *rebalancer) repartition(epoch int) (*partition.Layout, error) {
	g, k := r.p.Graph, r.layout.K
	seconds := make([]float64, k)
	for w, s := range r.sum {
		seconds[w] = s / float64(r.cfg.Window)
	}
	nodes, edges := partSizes(r.layout)
	cost := FitCost(nodes, edges, seconds)
	old := assignmentOf(r.layout)
	rec := Record{Epoch: epoch, ImbalanceBefore: Imbalance(seconds), WindowBefore: []int{r.from, epoch}, Cost: cost,
		ImbalancePredicted: Imbalance(cost.Predict(g, old, k))}
	parts := old // what rank 0 proposes; the others receive it
	if r.c.Rank() == 0 {
		var err error
		if parts, err = r.propose(epoch, cost, old, rec.ImbalancePredicted); err != nil {
			return nil, err
		}
	}
	parts, err := share(r.c, parts)
	if err != nil {
		return nil, err
	}
	for v := range parts {
		if parts[v] != old[v] {
			rec.NodesMoved++
		}
	}
	var layout *partition.Layout
	if rec.NodesMoved > 0 {
		if layout, err = r.layouts.build(epoch, g, parts, k); err != nil {
			return nil, fmt.Errorf("fullgraph: the new partition: %w", err)
		}
		r.layout = layout
		rec.ImbalancePredicted = Imbalance(cost.Predict(g, parts, k))
	}
	for p := range r.layout.Parts {
		rec.PartNodes = append(rec.PartNodes, len(r.layout.Parts[p].Owned))
	}
	r.records = append(r.records, rec)
	r.onLayout = 0
	r.report(rec)
	return layout, nil
}

// propose re-partitions with node weights from cost, the parts renamed to
// keep the most nodes where they are; old, the current assignment (whose
// imbalance by cost is predicted), unless cost predicts nothing or the new
// one no better.
func (r *rebalancer) propose(epoch int, cost Cost, old []int32, predicted float64) ([]int32, error) {
	g, k := r.p.Graph, r.layout.K
	if cost.Zero() {
		return old, nil
	}
	p, err := r.cfg.Partitioner.Partition(g, k, partition.Options{Seed: r.cfg.Seed, NodeWeights: cost.Weights(g)})
	if err != nil {
		return nil, fmt.Errorf("fullgraph: re-partitioning after epoch %d: %w", epoch, err)
	}
	parts := relabel(old, p, k)
	if Imbalance(cost.Predict(g, parts, k)) >= predicted {
		return old, nil
	}
	return parts, nil
}

// share sends rank 0's parts to every worker and returns them.
func share(c comm.Communicator, parts []int32) ([]int32, error) {
	buf := make([]byte, 4*len(parts))
	if c.Rank() == 0 {
		for v, p := range parts {
			binary.LittleEndian.PutUint32(buf[4*v:], uint32(p))
		}
	}
	if err := c.Broadcast(rebalanceSite, 0, buf); err != nil {
		return nil, fmt.Errorf("fullgraph: receiving the new partition: %w", err)
	}
	out := make([]int32, len(parts))
	for v := range out {
		out[v] = int32(binary.LittleEndian.Uint32(buf[4*v:]))
	}
	return out, nil
}

// rebind moves s to this worker's part of layout: a new halo exchange with
// the old one's codec and schedule, the part's data, the same model.
func (r *rebalancer) rebind(s *Stepper, layout *partition.Layout, acc *epochAccounts) error {
	part := &layout.Parts[r.c.Rank()]
	ex, err := halo.New(r.c, part, r.hc)
	if err != nil {
		return err
	}
	agg, err := sample.AggregationOf(s.model.Config.Model)
	if err != nil {
		return err
	}
	p := r.p
	d, err := PartOf(p.Graph, p.Features, p.Labels, p.Train, p.Val, p.Test, part, agg, ex)
	if err != nil {
		return err
	}
	if s.ex != nil {
		acc.codecBefore += s.ex.CodecSeconds()
	}
	return s.rebind(d, ex)
}

// assignmentOf returns the part of every node of layout.
func assignmentOf(layout *partition.Layout) []int32 {
	parts := make([]int32, layout.N)
	for p := range layout.Parts {
		for _, v := range layout.Parts[p].Owned {
			parts[v] = int32(p)
		}
	}
	return parts
}

// relabel renames the parts of next so that they overlap old's as much as
// a greedy matching finds (largest overlaps first): which worker holds a
// part is arbitrary, and this way the fewest nodes change workers.
func relabel(old, next []int32, k int) []int32 {
	overlap := make([]int, k*k) // [next part][old part]
	for v, p := range next {
		overlap[int(p)*k+int(old[v])]++
	}
	pairs := make([]int, k*k)
	for i := range pairs {
		pairs[i] = i
	}
	slices.SortStableFunc(pairs, func(a, b int) int { return cmp.Compare(overlap[b], overlap[a]) })
	to := make([]int32, k)
	for i := range to {
		to[i] = -1
	}
	taken := make([]bool, k)
	for _, pr := range pairs {
		n, o := pr/k, pr%k
		if to[n] < 0 && !taken[o] {
			to[n], taken[o] = int32(o), true
		}
	}
	out := make([]int32, len(next))
	for v, p := range next {
		out[v] = to[p]
	}
	return out
}

// Checkpoint tensors of a rebalanced run: the assignment in force (part
// ids) and the records with the number of parts (JSON bytes), so that a
// resume continues on the same partition.
const (
	assignmentTensor = "rebalance/assignment"
	recordsTensor    = "rebalance/records"
)

type savedRebalance struct {
	Parts   int      `json:"parts"`
	Records []Record `json:"records"`
}

// addTo adds the current assignment and the records to st.
func (r *rebalancer) addTo(st *checkpoint.State) error {
	if len(r.records) == 0 {
		return nil
	}
	b, err := json.Marshal(savedRebalance{Parts: r.layout.K, Records: r.records})
	if err != nil {
		return err
	}
	parts := make([]float32, r.layout.N) // part ids are exact in float32
	for v, p := range assignmentOf(r.layout) {
		parts[v] = float32(p)
	}
	st.Tensors = append(st.Tensors, bytesTensor(recordsTensor, b), checkpoint.Tensor{Name: assignmentTensor, Shape: []int{len(parts)}, Data: parts})
	return nil
}

// resumedLayout returns the layout a run resuming from st trains on: the
// one st's rebalanced run had reached, when it had as many parts as
// layout, else layout (a resume on another number of workers
// re-partitions anyway); and st's records of re-partitions.
func resumedLayout(g *graph.Graph, layout *partition.Layout, st *checkpoint.State, layouts *sharedLayouts) (*partition.Layout, []Record, error) {
	rt := st.Tensor(recordsTensor)
	if rt == nil {
		return layout, nil, nil
	}
	var saved savedRebalance
	raw := compress.FloatBytes(rt.Data)
	if i := slices.Index(raw, 0); i >= 0 {
		raw = raw[:i] // the padding to whole float32s
	}
	if err := json.Unmarshal(raw, &saved); err != nil {
		return nil, nil, fmt.Errorf("fullgraph: the checkpoint's rebalancing records: %w", err)
	}
	if saved.Parts != layout.K {
		return layout, saved.Records, nil
	}
	at := st.Tensor(assignmentTensor)
	if at == nil || len(at.Data) != g.N {
		return nil, nil, fmt.Errorf("fullgraph: the checkpoint lacks the assignment of its %d nodes", g.N)
	}
	parts := make([]int32, g.N)
	for v, p := range at.Data {
		parts[v] = int32(p)
	}
	l, err := layouts.build(0, g, parts, layout.K)
	if err != nil {
		return nil, nil, fmt.Errorf("fullgraph: the checkpoint's assignment: %w", err)
	}
	return l, saved.Records, nil
}

// keepSaving has hooks' checkpoints (if any) carry the rebalancing state
// (on rank 0, which writes them), and returns what saves the checkpoint of
// an epoch again after a re-partition at its end: a checkpoint is saved
// before the epoch's callback, where the partition changes, and a resume
// must continue on the new one. Every worker calls it, as it does Checkpoint.
func (r *rebalancer) keepSaving(hooks *train.Hooks, loop *train.Loop) func(epoch int) error {
	save := hooks.SaveCheckpoint
	if r == nil || save == nil {
		return func(int) error { return nil }
	}
	savedAt := 0
	withState := func(st *checkpoint.State) error {
		savedAt = st.Step
		if r.c.Rank() == 0 {
			if err := r.addTo(st); err != nil {
				return err
			}
		}
		return save(st)
	}
	hooks.SaveCheckpoint = withState
	return func(epoch int) error {
		if savedAt != epoch {
			return nil
		}
		st, err := loop.Checkpoint()
		if err != nil {
			return err
		}
		return withState(st)
	}
}

// afterEpoch takes epoch's compute seconds of every worker and, when they
// call for it, re-partitions and moves s to its new part.
func (r *rebalancer) afterEpoch(epoch int, seconds []float64, s *Stepper, acc *epochAccounts, resave func(epoch int) error) error {
	if r == nil || !r.observe(epoch, seconds) {
		return nil
	}
	layout, err := r.repartition(epoch)
	if err != nil {
		return err
	}
	if layout != nil {
		if err := r.rebind(s, layout, acc); err != nil {
			return err
		}
	}
	if err := resave(epoch); err != nil {
		return err
	}
	// The next epoch starts when every worker has its new part, so that
	// none of them counts another's rebuilding as its own communication.
	if err := r.c.Barrier(rebalanceSite); err != nil {
		return err
	}
	acc.skip(r.c, s.ex)
	return nil
}

// sharedLayouts lets the workers of one process build each new layout
// once: they all receive the same assignment, and a layout is read-only.
type sharedLayouts struct {
	mu     sync.Mutex
	key    int // the epoch of the re-partition (0: the resumed checkpoint's)
	layout *partition.Layout
	err    error
}

// build returns the layout of parts, the re-partition after epoch key's;
// the first worker to ask builds it, the others wait for it. A nil s
// builds every time.
func (s *sharedLayouts) build(key int, g *graph.Graph, parts []int32, k int) (*partition.Layout, error) {
	if s == nil {
		return partition.BuildLayout(g, parts, k)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.layout == nil && s.err == nil || s.key != key {
		s.key = key
		s.layout, s.err = partition.BuildLayout(g, parts, k)
	}
	return s.layout, s.err
}
