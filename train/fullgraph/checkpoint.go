package fullgraph

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/nn"
)

// checkpointMeta is the JSON part of a trainer checkpoint.
type checkpointMeta struct {
	Progress       progress        `json:"progress"`
	ModelStep      uint64          `json:"model_step"` // dropout's clock
	OptimizerSteps int             `json:"optimizer_steps"`
	Schedule       json.RawMessage `json:"schedule,omitempty"`
	Fingerprint    string          `json:"fingerprint"`
}

// fingerprint names what a checkpoint must match: the model, the optimiser
// and every parameter's name and shape.
func (t *Trainer) fingerprint() string {
	c := t.cfg.Model
	s := fmt.Sprintf("%s in=%d hidden=%d classes=%d layers=%d heads=%d/%d act=%s opt=%s",
		c.Model, c.InFeatures, c.Hidden, c.Classes, c.Layers, c.Heads, c.OutputHeads, c.Activation, t.cfg.Optimizer.Algorithm)
	for _, p := range t.params {
		s += fmt.Sprintf(" %s%v", p.Name, p.Shape)
	}
	return s
}

// Checkpoint captures everything needed to continue this run exactly:
// current and best parameters, optimiser state, dropout and schedule
// clocks, and model-selection progress. Every worker holds the same state;
// one of them writes it.
func (t *Trainer) Checkpoint() (*checkpoint.State, error) {
	meta := checkpointMeta{Progress: t.progress, ModelStep: t.model.Step(), Fingerprint: t.fingerprint()}
	if ex := t.cfg.Exchange; ex != nil {
		var err error
		if meta.Schedule, err = ex.ScheduleState(); err != nil {
			return nil, fmt.Errorf("fullgraph: checkpoint: %w", err)
		}
	}
	opt := t.opt.State()
	meta.OptimizerSteps = opt.Steps
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("fullgraph: checkpoint: %w", err)
	}
	s := &checkpoint.State{Step: t.progress.Epoch, Meta: mj}
	for i, p := range t.params {
		s.Tensors = append(s.Tensors,
			checkpoint.Tensor{Name: "param/" + p.Name, Shape: []int{p.Value.Rows, p.Value.Cols}, Data: p.Value.Data},
			checkpoint.Tensor{Name: "best/" + p.Name, Shape: []int{p.Value.Rows, p.Value.Cols}, Data: t.best[i].Data})
		for _, key := range optimizerKeys(p, opt) {
			s.Tensors = append(s.Tensors, checkpoint.Tensor{Name: "optim/" + key, Shape: []int{len(opt.Buffers[key])}, Data: opt.Buffers[key]})
		}
	}
	return s, nil
}

// optimizerKeys lists p's optimiser buffers in a fixed order.
func optimizerKeys(p *nn.Param, st nn.OptimizerState) []string {
	var keys []string
	for _, b := range []string{"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"} {
		if _, ok := st.Buffers[p.Name+"."+b]; ok {
			keys = append(keys, p.Name+"."+b)
		}
	}
	return keys
}

// Restore continues from a checkpoint of the same model and optimiser; Run
// then picks up after the checkpoint's epoch. Every worker restores the
// same checkpoint.
func (t *Trainer) Restore(s *checkpoint.State) error {
	var meta checkpointMeta
	if err := json.Unmarshal(s.Meta, &meta); err != nil {
		return fmt.Errorf("fullgraph: checkpoint metadata: %w", err)
	}
	if want := t.fingerprint(); meta.Fingerprint != want {
		return fmt.Errorf("fullgraph: the checkpoint is of a different model or optimiser (%s), not %s", meta.Fingerprint, want)
	}
	get := func(name string, n int) ([]float32, error) {
		tt := s.Tensor(name)
		if tt == nil || len(tt.Data) != n {
			return nil, fmt.Errorf("fullgraph: checkpoint lacks %s or has the wrong size", name)
		}
		return tt.Data, nil
	}
	opt := nn.OptimizerState{Steps: meta.OptimizerSteps, Buffers: map[string][]float32{}}
	for _, tt := range s.Tensors {
		if key, ok := strings.CutPrefix(tt.Name, "optim/"); ok {
			opt.Buffers[key] = tt.Data
		}
	}
	for i, p := range t.params {
		v, err := get("param/"+p.Name, len(p.Value.Data))
		if err != nil {
			return err
		}
		b, err := get("best/"+p.Name, len(p.Value.Data))
		if err != nil {
			return err
		}
		copy(p.Value.Data, v)
		copy(t.best[i].Data, b)
	}
	if err := t.opt.SetState(opt); err != nil {
		return fmt.Errorf("fullgraph: checkpoint: %w", err)
	}
	if ex := t.cfg.Exchange; ex != nil {
		if err := ex.RestoreSchedule(meta.Schedule); err != nil {
			return err
		}
	}
	t.model.SetStep(meta.ModelStep)
	t.progress = meta.Progress
	return nil
}
