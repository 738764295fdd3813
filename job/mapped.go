package job

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

// WillNeedEnv sets when a mapped feature file's pages are advised ahead
// of each batch's gather (MADV_WILLNEED): "auto" (the default) when the
// process has read from storage since the last batch, "on" always, "off"
// never (dataset.Advice), to measure what the advice gains.
const WillNeedEnv = "GRAFT_FEATURES_WILLNEED"

// MappedSummary describes a run's mapped feature file (--features-mmap):
// how much of it the page cache held and what reading it cost.
type MappedSummary struct {
	File  string `json:"file"`
	DType string `json:"dtype"` // fp32 or bf16
	Bytes int64  `json:"bytes"`
	Auto  bool   `json:"auto"` // mapped because it is over half the memory available
	// WillNeed says when each batch's pages were advised ahead (auto:
	// after storage reads, on, off), AdvisedBatches how many batches'
	// pages were.
	WillNeed       string `json:"willneed"`
	AdvisedBatches int64  `json:"advised_batches"`
	// TouchedBytes counts the pages the mini-batch gathers read, each
	// page once per batch; StorageReadBytes what the process read from
	// storage during training (page-cache misses and the advised
	// readahead), MajorFaults the faults that waited for such a read.
	TouchedBytes     int64 `json:"touched_bytes"`
	StorageReadBytes int64 `json:"storage_read_bytes"`
	MajorFaults      int64 `json:"major_faults"`
	// HitRate estimates the gathers' page-cache hit rate, 1 - storage
	// reads / touched bytes (absent where the system does not count the
	// reads).
	HitRate *float64 `json:"page_cache_hit_rate,omitempty"`
	// ResidentStart and ResidentEnd are the file's bytes in the page
	// cache when training started and ended (mincore; -1: unknown).
	ResidentStart int64 `json:"resident_start_bytes"`
	ResidentEnd   int64 `json:"resident_end_bytes"`
	// RSSAnonBytes and RSSFileBytes split the process's resident memory
	// when training ended: its own (anonymous) pages, and file pages,
	// the mapping's among them, which the kernel can drop.
	RSSAnonBytes int64 `json:"rss_anon_bytes"`
	RSSFileBytes int64 `json:"rss_file_bytes"`

	reads, faults int64 // at the start
	readsKnown    bool
}

// checkMapped refuses the settings mapped features cannot serve without
// copying them whole, and says when they were mapped unasked.
func (s *Spec) checkMapped(ds *dataset.Dataset) error {
	m := ds.Mapped
	switch {
	case s.Files.Map == dataset.MapAlways && m == nil:
		return specError(fmt.Errorf("--features-mmap: the features of %s are not a .npy file to map; give one with --features FILE.npy", ds.Name))
	case m == nil:
		return nil
	case m.BF16 && s.Precision != string(train.BF16): // at bf16, checkRun refused what cannot read it
		return specError(fmt.Errorf("the features of %s are a mapped bfloat16 file (%s): train with --precision bf16", ds.Name, m.Path))
	case !m.BF16 && s.Precision == string(train.BF16):
		return specError(fmt.Errorf("--precision bf16 would copy the mapped float32 features (%s) into memory as bfloat16: write them as bf16 (graft data generate --features-dtype bf16), or read them (--features-mmap=false)", m.Path))
	}
	if m.Auto && s.Place.Rank == 0 {
		fmt.Fprintf(s.Log, "graft train: %s (%s) is over half the %s of memory available: mapped, not read (--features-mmap=false reads it)\n",
			m.Path, gib(m.Bytes), gib(m.Available))
	}
	return nil
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

// trainData is the dataset's training data; a mapped bfloat16 file's
// features go to the problem apart (mapBF16Features).
func (s *Spec) trainData(ds *dataset.Dataset, split dataset.Split) (fullgraph.Data, error) {
	if ds.DenseBF16 == nil {
		return fullgraph.FromDataset(ds, split, s.Features, s.RowNormalize)
	}
	if ds.Labels == nil {
		return fullgraph.Data{}, errors.New("dataset has no labels to train on")
	}
	return fullgraph.Data{Labels: ds.Labels, Train: split.Train, Val: split.Val, Test: split.Test}, nil
}

// useMapped gives the problem the mapped features' bfloat16 matrix and
// read-ahead advice, and starts counting what reading them costs.
func (in *input) useMapped(ds *dataset.Dataset, log io.Writer) {
	m := ds.Mapped
	if m == nil {
		return
	}
	if a, err := dataset.ParseAdvice(os.Getenv(WillNeedEnv)); err == nil {
		m.Advice = a
	} else if log != nil {
		fmt.Fprintf(log, "graft train: %s=%s: %v; advising on misses (auto)\n", WillNeedEnv, os.Getenv(WillNeedEnv), err)
	}
	in.mapped = m
	in.problem.FeaturesBF16 = ds.DenseBF16
	in.problem.WillRead = m.WillNeed
	dtype := "fp32"
	if m.BF16 {
		dtype = "bf16"
	}
	in.mappedSum = &MappedSummary{File: m.Path, DType: dtype, Bytes: m.Bytes, Auto: m.Auto, WillNeed: m.Advice.String()}
}

// startMapped takes the counters' values as training starts.
func (in *input) startMapped() {
	ms := in.mappedSum
	if ms == nil {
		return
	}
	ms.ResidentStart = resident(in.mapped)
	ms.reads, ms.readsKnown = sysstat.StorageReadBytes()
	ms.faults = sysstat.MajorFaults()
}

// endMapped completes the summary as training ends.
func (in *input) endMapped() *MappedSummary {
	ms := in.mappedSum
	if ms == nil {
		return nil
	}
	ms.ResidentEnd = resident(in.mapped)
	ms.TouchedBytes = in.mapped.TouchedPages() * int64(os.Getpagesize())
	ms.AdvisedBatches = in.mapped.AdvisedCalls()
	ms.MajorFaults = sysstat.MajorFaults() - ms.faults
	if reads, ok := sysstat.StorageReadBytes(); ok && ms.readsKnown {
		ms.StorageReadBytes = reads - ms.reads
		if ms.TouchedBytes > 0 {
			hit := max(0, 1-float64(ms.StorageReadBytes)/float64(ms.TouchedBytes))
			ms.HitRate = &hit
		}
	}
	if r, ok := sysstat.ResidentNow(); ok {
		ms.RSSAnonBytes, ms.RSSFileBytes = r.Anon, r.File
	}
	return ms
}

func resident(m *dataset.FeatureMap) int64 {
	if r, _, ok := m.Resident(); ok {
		return r
	}
	return -1
}

// release unmaps the features: nothing reads them once the job is done.
func (in *input) release() {
	if in.mapped != nil {
		in.mapped.Close()
	}
}
