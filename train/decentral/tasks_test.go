package decentral

import (
	"errors"
	"testing"
)

// Fast versions of the three tasks reach loose thresholds; the full-size
// runs are in scripts/decentral.sh.
func TestTasksQuick(t *testing.T) {
	tests := []struct {
		name  string
		run   func(Options) (*Result, error)
		check func(t *testing.T, r *Result)
	}{
		{"regression", func(o Options) (*Result, error) { return Regression(RegressionQuick(), o) },
			func(t *testing.T, r *Result) {
				if first := r.History[0].Distributed; r.Distributed > 0.03 || r.Distributed > first/2 {
					t.Errorf("test MSE %.4f (from %.4f), want ≤ 0.03 and halved", r.Distributed, first)
				}
			}},
		{"power", func(o Options) (*Result, error) { return Power(PowerQuick(), o) },
			func(t *testing.T, r *Result) {
				if r.Distributed < 0.98*r.Centralized || r.Distributed <= r.Baselines["full_power"] || r.Distributed <= r.Baselines["random_power"] {
					t.Errorf("sum-rate %.3f, central %.3f, baselines %v", r.Distributed, r.Centralized, r.Baselines)
				}
			}},
		{"scheduling", func(o Options) (*Result, error) { return Scheduling(SchedulingQuick(), o) },
			func(t *testing.T, r *Result) {
				if r.Distributed < 1.0 {
					t.Errorf("ratio to greedy %.3f, want ≥ 1", r.Distributed)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var evals []Evaluation
			onEval := func(e Evaluation) error {
				evals = append(evals, e)
				return nil
			}
			r, err := tt.run(Options{Rule: Adam, Piggyback: true, Seed: 1, OnEval: onEval})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
			checkEvaluations(t, r, evals)
			t.Logf("%s: distributed %.4f, centralized %.4f, %d rounds/batch", r.Metric, r.Distributed, r.Centralized, r.RoundsPerBatch)
		})
	}
}

// Training continues when messages are lost, links are cut and a node
// leaves and rejoins.
func TestRegressionSurvivesFaults(t *testing.T) {
	s := RegressionQuick()
	r, err := Regression(s, Options{Rule: Adam, Piggyback: true, Seed: 2, Drop: 0.1,
		Cuts:    []LinkCut{{A: 0, B: 2, From: 0, Rounds: 1000}},
		Outages: []Outage{{Node: 5, From: 100, Rounds: 400}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.AwayUpdates == 0 {
		t.Error("the node that left never skipped an update")
	}
	if first := r.History[0].Distributed; r.Distributed > first/2 {
		t.Errorf("test MSE %.4f from %.4f under faults: training stalled", r.Distributed, first)
	}
}

// OnEval sees every point of the history as it is made, named by the task
// and metric, and the result is the last one.
func checkEvaluations(t *testing.T, r *Result, evals []Evaluation) {
	t.Helper()
	if len(evals) != len(r.History) || len(evals) < 2 {
		t.Fatalf("%d evaluations for a history of %d", len(evals), len(r.History))
	}
	for i, e := range evals {
		if e.Task != r.Task || e.Metric != r.Metric || e.Point != r.History[i] {
			t.Errorf("evaluation %d is %+v, want %s/%s %+v", i, e, r.Task, r.Metric, r.History[i])
		}
	}
	if last := r.History[len(r.History)-1]; r.Distributed != last.Distributed || r.Centralized != last.Centralized {
		t.Errorf("result %g/%g is not the last evaluation %+v", r.Distributed, r.Centralized, last)
	}
}

// An error from OnEval (a full disk under the metrics file) stops the run.
func TestOnEvalErrorStopsTheRun(t *testing.T) {
	full := errors.New("no space left on device")
	calls := 0
	_, err := Regression(RegressionQuick(), Options{Rule: Adam, Seed: 1, OnEval: func(Evaluation) error {
		calls++
		return full
	}})
	if !errors.Is(err, full) || calls != 1 {
		t.Errorf("error %v after %d evaluations, want %v after the first", err, calls, full)
	}
}
