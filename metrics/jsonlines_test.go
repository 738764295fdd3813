package metrics

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The keys, in this order, are what graft train --metrics wrote before this
// package existed; rss_bytes is new and left out when unknown, and
// evaluated, newer, is always there (false for an epoch --eval-every
// skipped).
func TestJSONLinesKeys(t *testing.T) {
	tests := []struct {
		name  string
		epoch Epoch
		want  string
	}{
		{"every field", Epoch{Epoch: 3, Loss: 0.5, TrainAcc: 0.9, ValAcc: 0.8, TestAcc: 0.7, ValLoss: 0.6,
			EpochSeconds: 1.5, StepSeconds: 1, Ratio: 4, BytesFwd: 100, BytesBwd: 200, BytesGrad: 300,
			ComputeSeconds: 0.75, CommSeconds: 0.25, EmulatedCommSeconds: 0.5, EmulatedSeconds: 1.25, CodecSeconds: 0.125,
			WorkerCompute: []float64{0.5, 0.75}, RSSBytes: 1 << 20, Evaluated: true},
			`{"epoch":3,"loss":0.5,"train_acc":0.9,"val_acc":0.8,"test_acc":0.7,"val_loss":0.6,"epoch_seconds":1.5,"step_seconds":1,` +
				`"ratio":4,"bytes_fwd":100,"bytes_bwd":200,"bytes_grad":300,"compute_seconds":0.75,"comm_seconds":0.25,` +
				`"emulated_comm_seconds":0.5,"emulated_seconds":1.25,"codec_seconds":0.125,"worker_compute_seconds":[0.5,0.75],"rss_bytes":1048576,"evaluated":true}`},
		{"metrics beyond accuracy", Epoch{Epoch: 2, Ratio: 1, WorkerCompute: []float64{0}, RSSBytes: 1, ValF1: 0.5, TestF1: 0.25, ValAUC: 0.75, TestAUC: 0.625},
			`{"epoch":2,"loss":0,"train_acc":0,"val_acc":0,"test_acc":0,"val_loss":0,"epoch_seconds":0,"step_seconds":0,` +
				`"ratio":1,"bytes_fwd":0,"bytes_bwd":0,"bytes_grad":0,"compute_seconds":0,"comm_seconds":0,` +
				`"emulated_comm_seconds":0,"emulated_seconds":0,"codec_seconds":0,"worker_compute_seconds":[0],"rss_bytes":1,` +
				`"val_f1":0.5,"test_f1":0.25,"val_auc":0.75,"test_auc":0.625,"evaluated":false}`},
		{"as before rss_bytes", Epoch{Epoch: 1, Ratio: 1, WorkerCompute: []float64{0}},
			`{"epoch":1,"loss":0,"train_acc":0,"val_acc":0,"test_acc":0,"val_loss":0,"epoch_seconds":0,"step_seconds":0,` +
				`"ratio":1,"bytes_fwd":0,"bytes_bwd":0,"bytes_grad":0,"compute_seconds":0,"comm_seconds":0,` +
				`"emulated_comm_seconds":0,"emulated_seconds":0,"codec_seconds":0,"worker_compute_seconds":[0],"evaluated":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			sink := NewJSONLines(&buf)
			if err := sink.Record(tt.epoch); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want+"\n" {
				t.Errorf("line\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestJSONLinesRoundTrip(t *testing.T) {
	epochs := []Epoch{
		{Epoch: 1, Loss: 1.9, ValAcc: 0.3, Ratio: 128, BytesFwd: 7, WorkerCompute: []float64{0.1, 0.2}},
		{Epoch: 2, Loss: 1.2, ValAcc: 0.6, Ratio: 64, BytesFwd: 9, WorkerCompute: []float64{0.1, 0.3}, RSSBytes: 5 << 20},
	}
	path := filepath.Join(t.TempDir(), "m.jsonl")
	sink, err := CreateJSONLines[Epoch](path)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(sink)
	for _, e := range epochs {
		if err := r.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadJSONLines(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, epochs) {
		t.Errorf("read back %+v, want %+v", got, epochs)
	}
}

// Close leaves a writer the caller passed open: it is the caller's.
func TestJSONLinesCloseLeavesWriterOpen(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "m.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := NewJSONLines(f).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("still open\n"); err != nil {
		t.Errorf("the caller's file was closed: %v", err)
	}
}

func TestReadJSONLines(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    []Epoch
		wantErr string
	}{
		{"empty", "", nil, ""},
		{"blank lines and no final newline", "\n{\"epoch\":1}\n\n  \n{\"epoch\":2,\"loss\":0.5}", []Epoch{{Epoch: 1}, {Epoch: 2, Loss: 0.5}}, ""},
		{"CRLF", "{\"epoch\":1}\r\n{\"epoch\":2}\r\n", []Epoch{{Epoch: 1}, {Epoch: 2}}, ""},
		{"unknown keys are ignored", `{"epoch":4,"from_the_future":true}`, []Epoch{{Epoch: 4}}, ""},
		{"truncated last line", "{\"epoch\":1}\n{\"epoch\":2,\"lo", nil, "line 2: unexpected end of JSON input"},
		{"wrong type", "{\"epoch\":1}\n{\"epoch\":1}\n{\"bytes_fwd\":\"many\"}\n", nil, "line 3: json: cannot unmarshal string"},
		{"fraction in an integer", `{"bytes_fwd":1.5}`, nil, "line 1: json: cannot unmarshal number 1.5"},
		{"two objects on a line", `{"epoch":1} {"epoch":2}`, nil, "line 1: invalid character '{' after top-level value"},
		{"null", "null", nil, "line 1: not a JSON object"},
		{"array", "[1,2]", nil, "line 1: not a JSON object"},
		{"plain text", "epoch 1 loss 0.5", nil, "line 1: not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadJSONLines(strings.NewReader(tt.input))
			if !errorAsWanted(t, err, tt.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The reader never panics, and what it accepts survives a write and a
// second read unchanged.
func FuzzReadJSONLines(f *testing.F) {
	f.Add([]byte(`{"epoch":1,"loss":0.5,"worker_compute_seconds":[0.1,0.2],"rss_bytes":7}` + "\n{\"epoch\":2}\n"))
	f.Add([]byte("\n\n{}\r\n"))
	f.Add([]byte(`{"epoch":1e400}`))
	f.Add([]byte(`{"worker_compute_seconds":null}`))
	f.Add([]byte("{\"epoch\":1}\n{\"epoch\""))
	f.Fuzz(func(t *testing.T, data []byte) {
		epochs, err := ReadJSONLines(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("error %q does not name the line", err)
			}
			return
		}
		var buf bytes.Buffer
		sink := NewJSONLines(&buf)
		for _, e := range epochs {
			if err := sink.Record(e); err != nil {
				t.Fatalf("writing what was read: %v", err)
			}
		}
		again, err := ReadJSONLines(&buf)
		if err != nil {
			t.Fatalf("reading what was written: %v", err)
		}
		if !reflect.DeepEqual(again, epochs) {
			t.Errorf("round trip changed %+v into %+v", epochs, again)
		}
	})
}
