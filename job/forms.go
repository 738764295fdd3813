package job

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/sample"
)

// checkForms checks the settings that name a method by a form of its own
// (the split, the samplers, the codecs and the compression schedule, the
// gradient compression, the link) before any data loads, so that a typo
// fails at once, with the error the run would give once the data had
// loaded. What needs the data (a split the dataset does not ship, more
// workers than training nodes) is checked where it is used.
func (s *Spec) checkForms() error {
	if s.PartDir == "" { // the parts bring their split
		if err := dataset.CheckSplitSpec(s.Split); err != nil {
			return specError(splitError(s.Split, err))
		}
	}
	if err := s.checkSamplerForms(); err != nil {
		return err
	}
	if codec := s.Codec; codec != "" && codec != compress.Auto {
		if _, err := compress.Factory(codec); err != nil {
			return specError(fmt.Errorf("--compress: %v", err))
		}
	}
	if s.Schedule != "" {
		if _, err := compress.ParseSchedule(s.Schedule, s.Train.Epochs); err != nil {
			return specError(err)
		}
	}
	if spec := s.GradCompress; spec != "" && spec != "none" {
		if _, err := gradcomp.New(spec, s.gradOptions()); err != nil {
			return specError(fmt.Errorf("--grad-compress: %v", err))
		}
	}
	if _, err := s.evalCompression(); err != nil {
		return err
	}
	if s.Link != "" {
		if _, err := comm.ParseLink(s.Link); err != nil {
			return specError(fmt.Errorf("--link: %v", err))
		}
	}
	return nil
}

// checkSamplerForms checks the samplers' forms for the model's layers,
// and the settings of sampled training over parts. (checkAsync and
// checkPipeline have checked the settings of their modes.)
func (s *Spec) checkSamplerForms() error {
	layers := s.Train.Model.WithDefaults().Layers
	overParts := s.Parts > 1 && s.Async == nil && s.Pipeline == nil
	switch {
	case s.EvalSampler != "" && s.Sampler == "":
		return specError(errors.New("--eval-sampler samples evaluation's batches of a mini-batch run: add --sampler"))
	case s.Sampler == "":
		return nil
	case overParts:
		return s.checkDataParallel()
	case s.BatchSize < 1:
		return specError(fmt.Errorf("--batch-size %d: want at least 1", s.BatchSize))
	}
	if _, err := sample.ParsePartSpec(s.Sampler, layers); err != nil {
		return specError(fmt.Errorf("--sampler: %v", err))
	}
	if s.EvalSampler != "" {
		if _, err := sample.ParsePartSpec(s.EvalSampler, layers); err != nil {
			return specError(fmt.Errorf("--eval-sampler: %v", err))
		}
	}
	return nil
}

// splitError is the error of --split spec.
func splitError(spec string, err error) error {
	spec = cmp.Or(spec, "auto")
	if strings.HasPrefix(err.Error(), spec+":") {
		return fmt.Errorf("--split %v", err)
	}
	return fmt.Errorf("--split %s: %v", spec, err)
}
