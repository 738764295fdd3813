package job

// Settings are the data preparation, model, optimiser and selection
// settings a run was trained with, as the summary records them: what a
// recipe and the flags given resolved to.
type Settings struct {
	LCC          bool    `json:"lcc"`
	RowNormalize bool    `json:"row_normalize"`
	Layers       int     `json:"layers"`
	Hidden       int     `json:"hidden"`
	Heads        int     `json:"heads"`
	Dropout      float64 `json:"dropout"`
	Normalize    bool    `json:"normalize"`
	Optimizer    string  `json:"optimizer"`
	LR           float64 `json:"lr"`
	WeightDecay  float64 `json:"weight_decay"`
	// DecayScope is "first-layer" or "all" parameters.
	DecayScope string `json:"weight_decay_scope"`
	MaxEpochs  int    `json:"max_epochs"`
	Patience   int    `json:"patience"`
	Select     string `json:"select"` // acc or loss
}

// settingsOf records what spec s trains with.
func settingsOf(s *Spec) *Settings {
	c := &s.Train
	st := &Settings{LCC: s.LCC, RowNormalize: s.RowNormalize,
		Layers: c.Model.Layers, Hidden: c.Model.Hidden, Heads: c.Model.Heads, Dropout: c.Model.Dropout, Normalize: c.Model.Normalize,
		Optimizer: string(c.Optimizer.Algorithm), LR: c.Optimizer.LR, WeightDecay: c.WeightDecay, DecayScope: "all",
		MaxEpochs: c.Epochs, Patience: c.Patience, Select: "acc"}
	if c.DecayFirstLayerOnly {
		st.DecayScope = "first-layer"
	}
	if c.SelectByLoss {
		st.Select = "loss"
	}
	return st
}
