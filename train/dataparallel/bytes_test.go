package dataparallel

import (
	"context"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/train/traintest"
)

// countingComm counts, independently of comm.Stats, the bytes handed to
// AllToAll per site.
type countingComm struct {
	comm.Communicator
	mu   *sync.Mutex
	sent map[string]int64
}

func (c countingComm) AllToAll(site string, send, recv [][]byte) error {
	var n int64
	for p, b := range send {
		if p != c.Rank() {
			n += int64(len(b))
		}
	}
	c.mu.Lock()
	c.sent[site] += n
	c.mu.Unlock()
	return c.Communicator.AllToAll(site, send, recv)
}

// "Report the bytes of structure, features and gradients separately": the
// reported bytes are the bytes that crossed the communicator at each site,
// for every sampler, and the one-off exchanges before the first epoch are
// the first epoch's setup bytes. With the neighbour sampler those are the
// setup records and the parts' node lists alone: each worker sends every
// other its setup record (8·setupFields bytes), layout fingerprint (8), training
// count (4) and nodes (4 bytes each); every other sampler shares more.
func TestReportedBytesEqualBytesSent(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	const k = 3
	parts := Parts(p, classes, randomLayout(t, p, k))
	ownership := int64((k - 1) * (8*setupFields*k + 12*k + 4*p.Graph.N))
	for _, spec := range []string{"neighbor:4,4", "fastgcn:30,20", "ladies:30,20", "saint-node:40", "saint-edge:20", "saint-rw:10:2", "cluster:8:3"} {
		t.Run(spec, func(t *testing.T) {
			var mu sync.Mutex
			sent := map[string]int64{}
			var structure, features, grad, setup int64
			err := withTimeout(t, func() error {
				return comm.Run(k, func(c comm.Communicator) error {
					cc := countingComm{Communicator: c, mu: &mu, sent: sent}
					_, _, err := RunWorker(context.Background(), cc, testConfig("sage"), parts[c.Rank()], Options{Sampler: spec, BatchSize: 10}, func(e metrics.Epoch) error {
						if c.Rank() != 0 {
							return nil
						}
						if e.Batches == 0 || e.SampleSeconds <= 0 || e.GatherSeconds <= 0 || e.InputNodes <= 0 || len(e.WorkerCompute) != k ||
							(e.Epoch > 1 && e.BytesSetup != 0) {
							t.Errorf("epoch record %+v", e)
						}
						structure += e.BytesStructure
						features += e.BytesFeatures
						grad += e.BytesGrad
						setup += e.BytesSetup
						return nil
					})
					return err
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			local := spec == "saint-node:40" || spec == "cluster:8:3"
			if grad == 0 || structure != sent[StructureSite] || features != sent[FeatureSite] || setup != sent[SetupSite] ||
				(structure == 0) != local || (features == 0) != local {
				t.Fatalf("reported %d structure, %d feature, %d setup and %d gradient bytes; %d, %d and %d crossed the communicator",
					structure, features, setup, grad, sent[StructureSite], sent[FeatureSite], sent[SetupSite])
			}
			if (spec == "neighbor:4,4") != (setup == ownership) || setup < ownership {
				t.Fatalf("%d setup bytes; the setup records and node lists alone are %d", setup, ownership)
			}
			if sent[EvalSite] == 0 {
				t.Fatal("evaluation fetched no rows")
			}
			t.Logf("%d setup bytes (setup records and node lists %d)", setup, ownership)
		})
	}
}

// runCoded trains the parts with the feature rows encoded by codec at
// sched's ratios (none: raw rows) and returns rank 0's trace and the
// feature bytes sent.
func runCoded(t *testing.T, parts []*partstore.Part, codec, sched string) (trace, int64) {
	t.Helper()
	cfg := testConfig("gcn")
	opts := Options{Sampler: "neighbor:4,4", BatchSize: 10}
	if codec != "" {
		var err error
		if opts.Codec, err = compress.Factory(codec); err != nil {
			t.Fatal(err)
		}
		if opts.Schedule, err = compress.ScheduleFactory(sched, cfg.Epochs); err != nil {
			t.Fatal(err)
		}
	}
	var tr trace
	var features int64
	err := withTimeout(t, func() error {
		return comm.Run(len(parts), func(c comm.Communicator) error {
			_, loop, err := RunWorker(context.Background(), c, cfg, parts[c.Rank()], opts, func(e metrics.Epoch) error {
				if c.Rank() == 0 {
					tr.losses = append(tr.losses, e.Loss)
					features += e.BytesFeatures
				}
				return nil
			})
			if err == nil && c.Rank() == 0 {
				for _, p := range loop.Model().Params() {
					tr.params = append(tr.params, p.Value.Data...)
				}
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr, features
}

// The feature rows go through the boundary compressors: "none" is the raw
// rows bit for bit; bf16 halves the rows' bytes; truncation at ratio 4
// sends fewer still.
func TestFeatureRowsCompressed(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 3))
	raw, rawBytes := runCoded(t, parts, "", "")
	none, noneBytes := runCoded(t, parts, "none", "fixed:1")
	if noneBytes != rawBytes || len(none.losses) != len(raw.losses) {
		t.Fatalf("codec none: %d feature bytes, raw rows %d", noneBytes, rawBytes)
	}
	for i := range raw.losses {
		if none.losses[i] != raw.losses[i] {
			t.Fatalf("codec none: epoch %d's loss %v, raw rows %v", i+1, none.losses[i], raw.losses[i])
		}
	}
	for i := range raw.params {
		if none.params[i] != raw.params[i] {
			t.Fatalf("codec none: parameter %d differs", i)
		}
	}
	_, bf16Bytes := runCoded(t, parts, "bf16", "fixed:1")
	_, truncBytes := runCoded(t, parts, "truncate", "fixed:4")
	// The ids asked are not compressed: 4 bytes a row either way.
	if bf16Bytes >= rawBytes*3/4 || truncBytes >= bf16Bytes || truncBytes == 0 {
		t.Fatalf("feature bytes: raw %d, bf16 %d, truncate at 4 %d", rawBytes, bf16Bytes, truncBytes)
	}
}
