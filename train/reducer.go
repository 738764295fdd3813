package train

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/gradcomp"
)

// CommReducer sums over the workers of a Communicator: gradients with its
// all-reduce (or Grad's compression), metric sums in float64 by exchanging
// them and adding in rank order, so that every worker gets the same bits.
type CommReducer struct {
	Comm comm.Communicator
	// Grad, if set, sums the gradients compressed instead of with the
	// exact all-reduce; each worker has its own.
	Grad       gradcomp.Method
	send, recv [][]byte
}

// Sites under which the reducer's traffic is counted.
const (
	GradientSite = "allreduce.grad"
	MetricSite   = "allreduce.metrics"
	// CounterSite is the per-epoch exchange of the workers' counters
	// (Gather); it is left out of the communication it reports.
	CounterSite = "metrics.epoch"
	// StateSite gathers the workers' compression state for a checkpoint.
	StateSite = "checkpoint.gradcomp"
)

func (r *CommReducer) SumFloat32(x []float32) error {
	if r.Grad != nil {
		return r.Grad.Reduce(r.Comm, GradientSite, x)
	}
	return r.Comm.AllReduce(GradientSite, x)
}

// SetEpoch tells Grad the epoch of the steps that follow (its warm-up)
// and reports whether those steps' gradients arrive late.
func (r *CommReducer) SetEpoch(epoch int) (delayed bool) {
	return r.Grad != nil && gradcomp.SetEpoch(r.Grad, epoch)
}

// SetParamShapes gives Grad the packed gradient's layout.
func (r *CommReducer) SetParamShapes(shapes []gradcomp.Shape) error {
	if r.Grad == nil {
		return nil
	}
	return r.Grad.Init(shapes, r.Comm.Size())
}

// GatherState collects every worker's compression state on rank 0, as
// tensors named gradcomp/RANK/NAME; the other workers get nil.
func (r *CommReducer) GatherState() ([]checkpoint.Tensor, error) {
	if r.Grad == nil || r.Grad.State() == nil {
		return nil, nil
	}
	mine := r.Grad.State()
	var buf []byte
	for _, t := range mine {
		buf = compress.AppendFloats(buf, t.Data)
	}
	n := r.Comm.Size()
	send, recv := make([][]byte, n), make([][]byte, n)
	send[0] = buf
	if err := r.Comm.AllToAll(StateSite, send, recv); err != nil {
		return nil, err
	}
	if r.Comm.Rank() != 0 {
		return nil, nil
	}
	var out []checkpoint.Tensor
	for p, b := range recv {
		if len(b) != len(buf) {
			return nil, fmt.Errorf("train: rank %d sent %d bytes of compression state, want %d", p, len(b), len(buf))
		}
		for _, t := range mine { // every worker's state has the same layout
			data := compress.ReadFloats(make([]float32, 0, len(t.Data)), b[:4*len(t.Data)])
			b = b[4*len(data):]
			out = append(out, checkpoint.Tensor{Name: stateName(p, t.Name), Shape: []int{len(data)}, Data: data})
		}
	}
	return out, nil
}

// RestoreState takes this worker's compression state from s.
func (r *CommReducer) RestoreState(s *checkpoint.State) error {
	if r.Grad == nil || r.Grad.State() == nil {
		return nil
	}
	var state []gradcomp.Tensor
	for _, t := range r.Grad.State() {
		name := stateName(r.Comm.Rank(), t.Name)
		ct := s.Tensor(name)
		if ct == nil {
			return fmt.Errorf("train: the checkpoint lacks %s (gradient compression %s keeps it)", name, r.Grad)
		}
		state = append(state, gradcomp.Tensor{Name: t.Name, Data: ct.Data})
	}
	if err := r.Grad.Restore(state); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	return nil
}

func stateName(rank int, name string) string {
	return "gradcomp/" + strconv.Itoa(rank) + "/" + name
}

func (r *CommReducer) SumFloat64(x []float64) error {
	all, err := r.exchange(MetricSite, x)
	if err != nil {
		return err
	}
	for i := range x {
		var s float64
		for _, row := range all {
			s += row[i]
		}
		x[i] = s
	}
	return nil
}

// Gather returns every worker's mine, by rank.
func (r *CommReducer) Gather(mine []float64) ([][]float64, error) {
	return r.exchange(CounterSite, mine)
}

// Concat returns every worker's mine, concatenated in rank order; the
// workers' lengths may differ.
func (r *CommReducer) Concat(mine []float64) ([]float64, error) {
	n := r.Comm.Size()
	send, recv := make([][]byte, n), make([][]byte, n)
	buf := make([]byte, 0, 8*len(mine))
	for _, v := range mine {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	for p := range send {
		send[p] = buf
	}
	if err := r.Comm.AllToAll(MetricSite, send, recv); err != nil {
		return nil, err
	}
	var all []float64
	for p, b := range recv {
		if len(b)%8 != 0 {
			return nil, fmt.Errorf("train: rank %d sent %d bytes, not whole float64s", p, len(b))
		}
		for i := 0; i < len(b); i += 8 {
			all = append(all, math.Float64frombits(binary.LittleEndian.Uint64(b[i:])))
		}
	}
	return all, nil
}

// RunInGroup is l.Run for one worker of c's group. Stopping is an error to
// the group, so an interrupted worker waits at a barrier until every
// worker is past its last collective: nobody's departure aborts another's.
func RunInGroup(ctx context.Context, l *Loop, hooks Hooks, c comm.Communicator) (Result, error) {
	res, err := l.Run(ctx, hooks)
	if errors.Is(err, ErrInterrupted) {
		if berr := c.Barrier("stop"); berr != nil {
			err = fmt.Errorf("%w; %v", err, berr)
		}
	}
	return res, err
}

// exchange sends x to every worker and returns what each sent.
func (r *CommReducer) exchange(site string, x []float64) ([][]float64, error) {
	n := r.Comm.Size()
	if r.send == nil {
		r.send, r.recv = make([][]byte, n), make([][]byte, n)
	}
	buf := r.send[0][:0]
	for _, v := range x {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	for p := range r.send {
		r.send[p] = buf
	}
	if err := r.Comm.AllToAll(site, r.send, r.recv); err != nil {
		return nil, err
	}
	all := make([][]float64, n)
	for p, b := range r.recv {
		if len(b) != 8*len(x) {
			return nil, fmt.Errorf("train: rank %d sent %d bytes of %d values, want %d", p, len(b), len(x), 8*len(x))
		}
		all[p] = make([]float64, len(x))
		for i := range x {
			all[p][i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return all, nil
}

// ReshareState rewrites the gradient compression state in s, the tensors
// gradcomp/RANK/NAME of from workers, as the state of to workers
// (gradcomp.Reshare), for a run resumed on a different number of workers.
func ReshareState(s *checkpoint.State, from, to int) error {
	states := make([][]gradcomp.Tensor, from)
	var rest []checkpoint.Tensor
	for _, t := range s.Tensors {
		rank, name, ok := parseStateName(t.Name)
		if !ok {
			rest = append(rest, t)
			continue
		}
		if rank >= from {
			return fmt.Errorf("train: the checkpoint of %d workers holds compression state of rank %d", from, rank)
		}
		states[rank] = append(states[rank], gradcomp.Tensor{Name: name, Data: t.Data})
	}
	if len(states[0]) == 0 {
		return nil
	}
	shared, err := gradcomp.Reshare(states, to)
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	for r, st := range shared {
		for _, t := range st {
			rest = append(rest, checkpoint.Tensor{Name: stateName(r, t.Name), Shape: []int{len(t.Data)}, Data: t.Data})
		}
	}
	s.Tensors = rest
	return nil
}

// parseStateName splits gradcomp/RANK/NAME.
func parseStateName(s string) (rank int, name string, ok bool) {
	rest, ok := strings.CutPrefix(s, "gradcomp/")
	if !ok {
		return 0, "", false
	}
	r, name, ok := strings.Cut(rest, "/")
	rank, err := strconv.Atoi(r)
	return rank, name, ok && err == nil && rank >= 0
}
