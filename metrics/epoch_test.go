package metrics

import (
	"errors"
	"reflect"
	"testing"
)

// memorySink keeps what it is handed, and can be told to fail.
type memorySink struct {
	epochs []Epoch
	closed int
	fail   error
}

func (m *memorySink) Record(e Epoch) error {
	m.epochs = append(m.epochs, e)
	return m.fail
}

func (m *memorySink) Close() error {
	m.closed++
	return m.fail
}

func TestRecorderTotals(t *testing.T) {
	tests := []struct {
		name      string
		epochs    []Epoch
		want      Totals
		imbalance float64
	}{
		{"no epochs", nil, Totals{}, 0},
		{"one worker", []Epoch{{Epoch: 1, ComputeSeconds: 2, WorkerCompute: []float64{2}}},
			Totals{Epochs: 1, ComputeSeconds: 2, WorkerCompute: []float64{2}}, 1},
		{"two workers over two epochs", []Epoch{
			{Epoch: 1, BytesFwd: 10, BytesBwd: 20, BytesGrad: 30, ComputeSeconds: 3, CommSeconds: 1, CodecSeconds: 0.5,
				EmulatedSeconds: 4, EmulatedCommSeconds: 1.5, WorkerCompute: []float64{1, 3}},
			{Epoch: 2, BytesFwd: 1, BytesBwd: 2, BytesGrad: 3, ComputeSeconds: 3, CommSeconds: 2, CodecSeconds: 0.25,
				EmulatedSeconds: 5, EmulatedCommSeconds: 2, WorkerCompute: []float64{1, 3}},
		}, Totals{Epochs: 2, BytesFwd: 11, BytesBwd: 22, BytesGrad: 33, ComputeSeconds: 6, CommSeconds: 3, CodecSeconds: 0.75,
			EmulatedSeconds: 9, EmulatedCommSeconds: 3.5, WorkerCompute: []float64{2, 6}}, 1.5},
		{"data-parallel, the setup in the first epoch", []Epoch{
			{Epoch: 1, BytesGrad: 30, BytesStructure: 5, BytesFeatures: 7, BytesSetup: 100},
			{Epoch: 2, BytesGrad: 30, BytesStructure: 6, BytesFeatures: 8},
		}, Totals{Epochs: 2, BytesGrad: 60, BytesStructure: 11, BytesFeatures: 15, BytesSetup: 100}, 0},
		{"parameter server, the parameters sent back counted apart", []Epoch{
			{Epoch: 1, BytesGrad: 40, BytesParams: 50},
			{Epoch: 2, BytesGrad: 36, BytesParams: 36},
		}, Totals{Epochs: 2, BytesGrad: 76, BytesParams: 86}, 0},
		{"worker count grows", []Epoch{{WorkerCompute: []float64{1}}, {WorkerCompute: []float64{1, 2}}},
			Totals{Epochs: 2, WorkerCompute: []float64{2, 2}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &memorySink{}
			r := NewRecorder(sink)
			for _, e := range tt.epochs {
				if err := r.Record(e); err != nil {
					t.Fatal(err)
				}
			}
			got := r.Totals()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("totals %+v, want %+v", got, tt.want)
			}
			w := tt.want
			if got.BytesTotal() != w.BytesFwd+w.BytesBwd+w.BytesGrad+w.BytesStructure+w.BytesFeatures+w.BytesSetup+w.BytesParams {
				t.Errorf("BytesTotal %d", got.BytesTotal())
			}
			var sum int64
			for _, e := range tt.epochs {
				sum += e.Bytes()
			}
			if sum != got.BytesTotal() {
				t.Errorf("the epochs' Bytes add up to %d, BytesTotal %d", sum, got.BytesTotal())
			}
			if imb := got.WorkerImbalance(); imb != tt.imbalance {
				t.Errorf("WorkerImbalance %g, want %g", imb, tt.imbalance)
			}
			if !reflect.DeepEqual(sink.epochs, tt.epochs) {
				t.Errorf("sink got %v, want %v", sink.epochs, tt.epochs)
			}
		})
	}
}

// The totals a caller holds do not change when the run goes on.
func TestRecorderTotalsAreACopy(t *testing.T) {
	r := NewRecorder()
	_ = r.Record(Epoch{WorkerCompute: []float64{1, 1}})
	before := r.Totals()
	_ = r.Record(Epoch{WorkerCompute: []float64{1, 1}})
	if before.WorkerCompute[0] != 1 {
		t.Errorf("an earlier Totals changed to %v", before.WorkerCompute)
	}
}

// One failing sink does not keep the epoch from the others, and its error
// comes back.
func TestRecorderSinkErrors(t *testing.T) {
	broken := errors.New("disk full")
	bad, good := &memorySink{fail: broken}, &memorySink{}
	r := NewRecorder(bad, good)
	if err := r.Record(Epoch{Epoch: 1}); !errors.Is(err, broken) {
		t.Errorf("Record error %v, want %v", err, broken)
	}
	if len(good.epochs) != 1 {
		t.Errorf("the working sink got %d epochs, want 1", len(good.epochs))
	}
	if err := r.Close(); !errors.Is(err, broken) {
		t.Errorf("Close error %v, want %v", err, broken)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if bad.closed != 1 || good.closed != 1 {
		t.Errorf("sinks closed %d and %d times, want once each", bad.closed, good.closed)
	}
}

func TestNilRecorder(t *testing.T) {
	var r *Recorder
	if err := r.Record(Epoch{Epoch: 1, BytesFwd: 5}); err != nil {
		t.Error(err)
	}
	if got := r.Totals(); !reflect.DeepEqual(got, Totals{}) {
		t.Errorf("totals %+v", got)
	}
	if err := r.Close(); err != nil {
		t.Error(err)
	}
}

// Recording with no sinks is cheap enough to leave on in every run: it
// allocates nothing once the per-worker totals exist.
func TestRecorderWithoutSinksAllocatesNothing(t *testing.T) {
	r := NewRecorder()
	e := Epoch{BytesFwd: 1, WorkerCompute: []float64{1, 2, 3, 4}}
	_ = r.Record(e)
	if allocs := testing.AllocsPerRun(100, func() { _ = r.Record(e) }); allocs != 0 {
		t.Errorf("Record allocates %v times per call", allocs)
	}
	var nilRecorder *Recorder
	if allocs := testing.AllocsPerRun(100, func() { _ = nilRecorder.Record(e) }); allocs != 0 {
		t.Errorf("nil Record allocates %v times per call", allocs)
	}
}

func TestResidentBytes(t *testing.T) {
	rss := ResidentBytes()
	if rss < 0 {
		t.Fatalf("ResidentBytes %d", rss)
	}
	if rss == 0 {
		t.Skip("this system does not report resident memory")
	}
	if rss < 1<<20 {
		t.Errorf("ResidentBytes %d: less than 1 MiB for a running Go test is not plausible", rss)
	}
}
