package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/comm/commtest"
	"github.com/graft-gnn/graft/train/traintest"
)

// Three stages over TCP, each with its own communicator over loopback
// connections, train exactly as the same stages in one process: the same
// losses and the same parameters, to the bit.
func TestOverTCPEqualsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("forms a TCP mesh")
	}
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	opts := Options{Stages: 3, Micros: 2, Sampler: testSampler, BatchSize: testBatch, Timeout: 30 * time.Second}
	want, _ := pipelined(t, cfg, p, opts)

	var got outcome
	results := make([]Result, opts.Stages)
	errs := commtest.TCP(t, opts.Stages, "pipeline test", func(c comm.Communicator) (err error) {
		report := got.record
		if c.Rank() != 0 {
			report = nil
		}
		if results[c.Rank()], err = RunRank(context.Background(), c, cfg, p, opts, report); err != nil {
			return err
		}
		return c.Barrier("done")
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	got.keep(t, results[0].Model, nil)
	if len(got.losses) != len(want.losses) {
		t.Fatalf("%d epochs over TCP, %d in process", len(got.losses), len(want.losses))
	}
	for e := range want.losses {
		if got.losses[e] != want.losses[e] || got.valAcc[e] != want.valAcc[e] {
			t.Fatalf("epoch %d: loss %v, val acc %v over TCP; %v, %v in process", e+1, got.losses[e], got.valAcc[e], want.losses[e], want.valAcc[e])
		}
	}
	for i := range want.params {
		if got.params[i] != want.params[i] {
			t.Fatalf("parameter %d: %v over TCP, %v in process", i, got.params[i], want.params[i])
		}
	}
}

// A stage that stalls, dies or finishes early is an error on its
// neighbour naming it, within the timeout; so is a first stage that
// stalls, on the stage after it.
func TestDeadOrStalledStageIsNamed(t *testing.T) {
	p := traintest.SBMProblem(t, 100)
	cfg := testConfig("gcn")
	cfg.Epochs = 1
	const timeout = 300 * time.Millisecond
	opts := Options{Stages: 2, Micros: 2, Sampler: testSampler, BatchSize: testBatch, Timeout: timeout}
	stall := func(c comm.Communicator) error {
		_, _, err := c.Recv("never", comm.AnyRank, time.Time{}) // until the other stage gives up
		return err
	}
	cases := []struct {
		name string
		odd  int // the rank that misbehaves
		do   func(c comm.Communicator) error
		want string
	}{
		{"last stalled", 1, stall, "pipeline: stage 0: stage 1 sent no gradients within 300ms (dead or stalled)"},
		{"last died", 1, func(comm.Communicator) error { return errors.New("out of memory") }, "rank 1: out of memory"},
		{"last finished", 1, func(comm.Communicator) error { return nil }, "stage 0: waiting for stage 1's gradients"},
		{"first stalled", 0, stall, "pipeline: stage 1: stage 0 sent no activations within 300ms (dead or stalled)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got error
			start := time.Now()
			comm.Run(2, func(c comm.Communicator) error {
				if c.Rank() == tc.odd {
					return tc.do(c)
				}
				_, got = RunRank(context.Background(), c, cfg, p, opts, nil)
				return got
			})
			if got == nil || !strings.Contains(got.Error(), tc.want) {
				t.Fatalf("got %v; want an error with %q", got, tc.want)
			}
			if d := time.Since(start); d > timeout+5*time.Second {
				t.Fatalf("the stage gave up after %v", d)
			}
		})
	}
}
