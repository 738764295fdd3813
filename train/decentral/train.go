package decentral

import (
	"fmt"
	"slices"
)

// Options are the knobs every task shares.
type Options struct {
	Rule      Rule    // optimiser rule; agents run its decentralised form, the reference its central form
	LR        float64 // zero: the task's default
	Piggyback bool
	Drop      float64 // message loss probability
	Cuts      []LinkCut
	Outages   []Outage
	Seed      uint64
	// Progress, if set, is called after every mini-batch.
	Progress func(done, total int)
	// OnEval, if set, is called with every evaluation as it is made, so a
	// long run's history can be written while it runs; an error stops the
	// run.
	OnEval func(Evaluation) error
}

func (o Options) faults() *Faults {
	if o.Drop == 0 && o.Cuts == nil && o.Outages == nil {
		return nil
	}
	return &Faults{Drop: o.Drop, Seed: mix64(o.Seed ^ streamFaults), Cuts: o.Cuts, Outages: o.Outages}
}

// Cost is the communication of one mini-batch across the whole network.
type Cost struct {
	Rounds   int   `json:"rounds"`
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
}

// Point is one evaluation during training.
type Point struct {
	Batch       int     `json:"batch"`
	Rounds      int     `json:"rounds"` // cumulative rounds of message passing
	Distributed float64 `json:"distributed"`
	Centralized float64 `json:"centralized"`
}

// Evaluation is one Point of a task's metric, named: a line of the history
// graft decentral --metrics writes.
type Evaluation struct {
	Task   string `json:"task"`
	Metric string `json:"metric"`
	Point
}

// Result is a task's outcome.
type Result struct {
	Task        string  `json:"task"`
	Metric      string  `json:"metric"`
	Optimizer   string  `json:"optimizer"`
	Seed        uint64  `json:"seed"`
	Drop        float64 `json:"drop"`
	Piggyback   bool    `json:"piggyback"`
	Distributed float64 `json:"distributed"`
	Centralized float64 `json:"centralized"`
	// Batches is the number of training mini-batches and Total their
	// communication in the mode that ran (for scheduling, each batch's
	// acting pass included): the last Point's Rounds is Total.Rounds.
	Batches int  `json:"batches"`
	Total   Cost `json:"total"`
	// Cost of one training mini-batch in the mode that ran: Total over
	// Batches, rounded (mini-batches differ only in the messages that
	// faults drop and, for scheduling, in the conflict graph's size).
	RoundsPerBatch   int   `json:"rounds_per_batch"`
	MessagesPerBatch int64 `json:"messages_per_batch"`
	BytesPerBatch    int64 `json:"bytes_per_batch"`
	// Both modes, measured on the same mini-batch (for scheduling, whose
	// mini-batch is one sample, both are the mean per mini-batch).
	WithPiggyback    Cost               `json:"with_piggyback"`
	WithoutPiggyback Cost               `json:"without_piggyback"`
	RoundsFormula    string             `json:"rounds_formula"`
	Baselines        map[string]float64 `json:"baselines,omitempty"`
	AwayUpdates      int                `json:"away_updates,omitempty"` // agent updates skipped while off the network
	History          []Point            `json:"history"`
}

// record appends an evaluation to the history, makes it the result so far
// (the last evaluation is the result), and hands it to onEval.
func (r *Result) record(pt Point, onEval func(Evaluation) error) error {
	r.History = append(r.History, pt)
	r.Distributed, r.Centralized = pt.Distributed, pt.Centralized
	if onEval == nil {
		return nil
	}
	return onEval(Evaluation{Task: r.Task, Metric: r.Metric, Point: pt})
}

// count adds one training mini-batch's communication to the totals and
// keeps the per-batch means in step with them.
func (r *Result) count(st ...Stats) {
	r.Batches++
	for _, s := range st {
		r.Total.Rounds += s.Rounds
		r.Total.Messages += s.Messages
		r.Total.Bytes += s.Bytes
	}
	n := int64(r.Batches)
	r.RoundsPerBatch = int((int64(r.Total.Rounds) + n/2) / n)
	r.MessagesPerBatch = (r.Total.Messages + n/2) / n
	r.BytesPerBatch = (r.Total.Bytes + n/2) / n
}

// central is the reference: one parameter copy trained on the whole graph.
type central struct {
	model  Model
	params []float64
	opt    optState
}

func newCentral(m Model, params []float64, opt Optimizer) *central {
	return &central{model: m, params: slices.Clone(params), opt: newOptState(opt, len(params))}
}

func (c *central) step(batch []Sample) (float64, error) {
	loss, grad, err := c.model.Gradient(c.params, batch)
	if err != nil {
		return 0, err
	}
	c.opt.step(c.params, c.params, grad)
	return loss, nil
}

// measureCosts runs one mini-batch's gradient in both modes on throwaway
// networks, so both costs are measured rather than derived.
func measureCosts(m Model, g Config, batch []Sample) (with, without Cost, err error) {
	for _, pig := range []bool{true, false} {
		cfg := g
		cfg.Piggyback, cfg.Faults = pig, nil
		net, err := New(cfg)
		if err != nil {
			return with, without, err
		}
		_, st, err := net.Gradients(batch)
		net.Close()
		if err != nil {
			return with, without, err
		}
		// Training adds one consensus round: every agent sends its
		// parameters and gradient to every neighbour.
		c := Cost{
			Rounds:   st.Rounds + 1,
			Messages: st.Messages + cfg.Graph.NumEdges(),
			Bytes:    st.Bytes + cfg.Graph.NumEdges()*int64(2*m.NumParams())*BytesPerValue,
		}
		if pig {
			with = c
		} else {
			without = c
		}
	}
	return with, without, nil
}

// RoundsFormula states the rounds per mini-batch the agents achieve for a
// model with L layers of K hops, B samples and a loss that reads the
// neighbours' outputs (coupled) or not: forward F = L·K (+1), backward
// W = (L−1)·K (+1), one consensus round.
func RoundsFormula(m Model, batch int, coupled bool) (with, without int, text string) {
	c := 0
	if coupled {
		c = 1
	}
	f := m.Layers()*m.Hops + c
	w := (m.Layers()-1)*m.Hops + c
	with = batch*f + w + 1
	without = batch*(f+w) + 1
	text = fmt.Sprintf("piggyback: B·F + W + 1 = %d·%d + %d + 1 = %d; without: B·(F+W) + 1 = %d (F = L·K%s, W = (L−1)·K%s; L=%d, K=%d)",
		batch, f, w, with, without, plusOne(coupled), plusOne(coupled), m.Layers(), m.Hops)
	return with, without, text
}

func plusOne(b bool) string {
	if b {
		return " + 1"
	}
	return ""
}
