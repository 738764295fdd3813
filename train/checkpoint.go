package train

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/optim"
)

// checkpointMeta is the JSON part of a loop's checkpoint.
type checkpointMeta struct {
	Progress       progress        `json:"progress"`
	ModelStep      uint64          `json:"model_step"` // dropout's clock
	OptimizerSteps int             `json:"optimizer_steps"`
	Stepper        json.RawMessage `json:"stepper,omitempty"`
	Fingerprint    string          `json:"fingerprint"`
}

// fingerprint names what a checkpoint must match: the model, the optimiser
// and every parameter's name and shape.
func (l *Loop) fingerprint() string {
	c := l.model.Config
	s := fmt.Sprintf("%s in=%d hidden=%d classes=%d layers=%d heads=%d/%d act=%s opt=%s",
		c.Model, c.InFeatures, c.Hidden, c.Classes, c.Layers, c.Heads, c.OutputHeads, c.Activation, l.cfg.Optimizer.Algorithm)
	for _, p := range l.params {
		s += fmt.Sprintf(" %s%v", p.Name, p.Shape)
	}
	return s
}

// Checkpoint captures everything needed to continue this run exactly:
// current and best parameters, optimiser state, the dropout clock, the
// stepper's state, and model-selection progress. Every worker holds the
// same state, but for a StatefulReducer's, which this call gathers from
// every worker (so every worker calls it); one of them writes it.
func (l *Loop) Checkpoint() (*checkpoint.State, error) {
	meta := checkpointMeta{Progress: l.progress, ModelStep: l.model.Step(), Fingerprint: l.fingerprint()}
	var err error
	if meta.Stepper, err = l.stepper.State(); err != nil {
		return nil, fmt.Errorf("train: checkpoint: %w", err)
	}
	var bulk []checkpoint.Tensor
	if ts, ok := l.stepper.(TensorStater); ok {
		if bulk, err = ts.StateTensors(); err != nil {
			return nil, fmt.Errorf("train: checkpoint: %w", err)
		}
	}
	opt := l.opt.State()
	meta.OptimizerSteps = opt.Steps
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("train: checkpoint: %w", err)
	}
	s := &checkpoint.State{Step: l.progress.Epoch, Meta: mj}
	if sr, ok := l.cfg.Reducer.(StatefulReducer); ok {
		ts, err := sr.GatherState()
		if err != nil {
			return nil, fmt.Errorf("train: checkpoint: %w", err)
		}
		s.Tensors = append(s.Tensors, ts...)
	}
	for i, p := range l.params {
		s.Tensors = append(s.Tensors,
			checkpoint.Tensor{Name: "param/" + p.Name, Shape: []int{p.Value.Rows, p.Value.Cols}, Data: p.Value.Data},
			checkpoint.Tensor{Name: "best/" + p.Name, Shape: []int{p.Value.Rows, p.Value.Cols}, Data: l.best[i].Data})
		for _, key := range optimizerKeys(p, opt) {
			s.Tensors = append(s.Tensors, checkpoint.Tensor{Name: "optim/" + key, Shape: []int{len(opt.Buffers[key])}, Data: opt.Buffers[key]})
		}
	}
	s.Tensors = append(s.Tensors, bulk...)
	return s, nil
}

func (l *Loop) save(to func(*checkpoint.State) error) error {
	st, err := l.Checkpoint()
	if err != nil {
		return err
	}
	return to(st)
}

// optimizerKeys lists p's optimiser buffers in a fixed order.
func optimizerKeys(p *nn.Param, st nn.OptimizerState) []string {
	var keys []string
	for _, b := range optim.BufferNames {
		if _, ok := st.Buffers[p.Name+"."+b]; ok {
			keys = append(keys, p.Name+"."+b)
		}
	}
	return keys
}

// Restore continues from a checkpoint of the same model and optimiser; Run
// then picks up after the checkpoint's epoch. Every worker restores the
// same checkpoint.
func (l *Loop) Restore(s *checkpoint.State) error {
	var meta checkpointMeta
	if err := json.Unmarshal(s.Meta, &meta); err != nil {
		return fmt.Errorf("train: checkpoint metadata: %w", err)
	}
	if want := l.fingerprint(); meta.Fingerprint != want {
		return fmt.Errorf("train: the checkpoint is of a different model or optimiser (%s), not %s", meta.Fingerprint, want)
	}
	get := func(name string, n int) ([]float32, error) {
		tt := s.Tensor(name)
		if tt == nil || len(tt.Data) != n {
			return nil, fmt.Errorf("train: checkpoint lacks %s or has the wrong size", name)
		}
		return tt.Data, nil
	}
	opt := nn.OptimizerState{Steps: meta.OptimizerSteps, Buffers: map[string][]float32{}}
	for _, tt := range s.Tensors {
		if key, ok := strings.CutPrefix(tt.Name, "optim/"); ok {
			opt.Buffers[key] = tt.Data
		}
	}
	for i, p := range l.params {
		v, err := get("param/"+p.Name, len(p.Value.Data))
		if err != nil {
			return err
		}
		b, err := get("best/"+p.Name, len(p.Value.Data))
		if err != nil {
			return err
		}
		copy(p.Value.Data, v)
		copy(l.best[i].Data, b)
	}
	if err := l.opt.SetState(opt); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := l.stepper.Restore(meta.Stepper); err != nil {
		return err
	}
	if sr, ok := l.cfg.Reducer.(StatefulReducer); ok {
		if err := sr.RestoreState(s); err != nil {
			return err
		}
	}
	if ts, ok := l.stepper.(TensorStater); ok {
		if err := ts.RestoreTensors(s.Tensor); err != nil {
			return err
		}
	}
	l.model.SetStep(meta.ModelStep)
	l.progress = meta.Progress
	return nil
}
