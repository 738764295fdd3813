package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

func init() {
	commands["train"] = command{"train a GNN on a whole graph (default: GCN on the embedded Cora)", runTrain}
}

// trainOptions are the flags of graft train. Numeric hyperparameters left
// unset take the chosen model's published values (train.PresetFor).
type trainOptions struct {
	dataset, split, model, dataDir string
	layers, hidden, heads, epochs  int
	patience                       int
	selectBy                       string
	lr, weightDecay, dropout       float64
	optimizer, features            string
	rowNormalize, lcc              bool
	normalize                      optionalBool
	seed                           uint64
	save, metricsFile, metricsAddr string
	asJSON                         bool
	dist                           distOptions
	worker                         workerOptions // multi-process runs (train_worker.go)
}

// trainSummary is the final JSON object of graft train --json.
type trainSummary struct {
	Dataset       string  `json:"dataset"`
	Split         string  `json:"split"`
	Model         string  `json:"model"`
	Seed          uint64  `json:"seed"`
	Features      string  `json:"features"`
	Epochs        int     `json:"epochs"`
	StoppedEarly  bool    `json:"stopped_early"`
	BestEpoch     int     `json:"best_epoch"`
	BestValAcc    float64 `json:"best_val_acc"`
	TestAcc       float64 `json:"test_acc"`
	TrainAcc      float64 `json:"train_acc"`
	EpochMsMedian float64 `json:"epoch_ms_median"`
	StepMsMedian  float64 `json:"step_ms_median"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	Parameters    int     `json:"parameters"`

	// Partition-parallel runs (all workers summed; zero for one worker).
	Parts           int     `json:"parts"`
	Partition       string  `json:"partition,omitempty"`
	Compress        string  `json:"compress"`
	Schedule        string  `json:"schedule"`
	BytesTotal      int64   `json:"bytes_total"`
	BytesFwd        int64   `json:"bytes_fwd"`
	BytesBwd        int64   `json:"bytes_bwd"`
	BytesGrad       int64   `json:"bytes_grad"`
	ComputeSeconds  float64 `json:"compute_seconds"`
	CommSeconds     float64 `json:"comm_seconds"`
	CodecSeconds    float64 `json:"codec_seconds"`
	EmulatedSeconds float64 `json:"emulated_seconds"`
	WorkerImbalance float64 `json:"worker_imbalance"`
}

func newTrainFlags(o *trainOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.StringVar(&o.dataset, "dataset", "cora", "dataset name ("+strings.Join(dataset.KnownNames(), ", ")+") or path")
	fs.StringVar(&o.split, "split", "public", "split: public, public:K, geom-gcn:K, random:T:V, frac:T:V or file:PATH[:K]")
	fs.StringVar(&o.model, "model", "gcn", "model: gcn, sage or gat")
	fs.StringVar(&o.dataDir, "data-dir", "", "data directory for named datasets (default $"+dataset.DataDirEnv+")")
	fs.IntVar(&o.layers, "layers", 0, "number of layers (default per model: 2)")
	fs.IntVar(&o.hidden, "hidden", 0, "hidden width, per head for GAT (default per model: gcn 16, sage 32, gat 8)")
	fs.IntVar(&o.heads, "heads", 0, "GAT attention heads of hidden layers (default 8)")
	fs.IntVar(&o.epochs, "epochs", 0, "maximum epochs (default per model: gcn 200, sage and gat 1000)")
	fs.StringVar(&o.selectBy, "select", "acc", "model selection: acc keeps the epoch of best validation accuracy; loss keeps the epoch of lowest validation loss and counts patience on the loss (Shchur et al.)")
	fs.IntVar(&o.patience, "patience", -1, "stop after this many epochs without a new best validation accuracy or loss; 0 never stops early (default per model: gcn 100, sage 50, gat 100)")
	fs.Float64Var(&o.lr, "lr", 0, "learning rate (default per model: gcn 0.01, sage 0.001, gat 0.005)")
	fs.Float64Var(&o.weightDecay, "weight-decay", -1, "weight decay (default per model: gcn 5e-4 on the first layer, sage 0.1 on the first layer, gat 5e-4)")
	fs.Float64Var(&o.dropout, "dropout", -1, "dropout rate (default per model: gcn 0.5, sage 0.4, gat 0.6, also on attention)")
	fs.StringVar(&o.optimizer, "optimizer", "adam", "optimizer: adam, adamw, amsgrad or sgd")
	fs.StringVar(&o.features, "features", "auto", "input feature storage: auto (sparse below 10% density), dense or sparse")
	fs.BoolVar(&o.rowNormalize, "row-normalize", true, "scale each node's features to sum to 1 (Kipf and Welling's preprocessing)")
	fs.Var(&o.normalize, "normalize", "scale every hidden layer's output to unit L2 norm per node (GraphSAGE's normalisation)")
	fs.BoolVar(&o.lcc, "lcc", false, "keep only the largest connected component (Shchur et al.'s preprocessing)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of initialisation, dropout and random splits")
	fs.StringVar(&o.save, "save", "", "write the best parameters to `FILE` (safetensors)")
	fs.StringVar(&o.metricsFile, "metrics", "", "write one JSON object per epoch to `FILE`")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics (graft_epoch, graft_loss, graft_bytes_total, …) at http://`HOST:PORT`/metrics during the run; HOST defaults to 127.0.0.1")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON summary on stdout instead of the text summary")
	o.dist.register(fs)
	o.worker.register(fs)
	return fs
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	var o trainOptions
	fs := newTrainFlags(&o)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q; all settings are flags (see 'graft train -h')", fs.Arg(0))}
	}
	cfg, storage, err := o.config()
	if err != nil {
		return usageError{err}
	}

	// As one worker of a multi-process job, only rank 0 reports and writes.
	if err := o.worker.resolve(fs, &o.dist); err != nil {
		return err
	}
	leader := o.worker.leader()
	if !leader {
		stdout = io.Discard
	}
	in, err := o.load(fs, storage, cfg.Epochs)
	if err != nil {
		return err
	}
	cfg.Model.Classes = in.classes
	distOpts := in.opts
	if note := o.dist.unusedWithOneWorker(); note != "" && leader {
		fmt.Fprintf(stderr, "graft train: %s have no effect with one worker: nothing crosses a boundary (add --parts N)\n", note)
	}

	var rec *metrics.Recorder
	if leader {
		sinks, err := o.metricSinks(stderr)
		if err != nil {
			return err
		}
		rec = metrics.NewRecorder(sinks...)
		defer rec.Close()
	}

	if err := o.dist.checkpoints(&distOpts, stderr, o.worker.multi()); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	progressOut := stderr
	if !leader {
		progressOut = io.Discard
	}
	progress := newTrainProgress(progressOut, cfg.Epochs, fmt.Sprintf("%s %s", o.model, in.name))
	res, trainer, err := o.run(ctx, cfg, in, distOpts, stderr, func(m metrics.Epoch) error {
		progress.epoch(m)
		return rec.Record(m)
	})
	progress.finish()
	switch {
	case errors.Is(err, train.ErrNotFinite):
		return fmt.Errorf("%v; lower the learning rate with --lr, or check the features for extreme values", err)
	case errors.Is(err, train.ErrInterrupted):
		if o.dist.checkpointDir != "" {
			return fmt.Errorf("%v; its checkpoint is in %s: continue with --resume %s", err, o.dist.checkpointDir, o.dist.checkpointDir)
		}
		return fmt.Errorf("%v; nothing was saved (use --checkpoint-dir to keep interrupted runs)", err)
	case err != nil:
		return err
	}
	if !leader {
		return nil
	}

	params := trainer.Model().Params()
	if o.save != "" {
		meta := map[string]string{"model": o.model, "dataset": in.name, "split": in.split,
			"epoch": fmt.Sprint(res.Best.Epoch), "seed": fmt.Sprint(o.seed)}
		if err := nn.SaveParamsFile(o.save, params, meta); err != nil {
			return fmt.Errorf("saving parameters: %v", err)
		}
	}
	sum := trainSummary{
		Dataset: in.name, Split: in.split, Model: o.model, Seed: o.seed,
		Features: "dense", Epochs: res.Epochs, StoppedEarly: res.StoppedEarly,
		BestEpoch: res.Best.Epoch, BestValAcc: res.Best.ValAcc, TestAcc: res.Best.TestAcc, TrainAcc: res.Best.TrainAcc,
		EpochMsMedian: 1000 * medianOrZero(res.EpochSeconds), StepMsMedian: 1000 * medianOrZero(res.StepSeconds),
		PeakRSSBytes: sysstat.PeakRSS(), Parameters: countParams(params),
	}
	o.dist.fill(&sum, rec.Totals())
	if in.sparse {
		sum.Features = "sparse"
	}
	if o.asJSON {
		return json.NewEncoder(stdout).Encode(sum)
	}
	fmt.Fprintf(stdout, "%s on %s (%s split, %s features, %d parameters)\n", sum.Model, sum.Dataset, sum.Split, sum.Features, sum.Parameters)
	stopped := ""
	if sum.StoppedEarly {
		stopped = ", stopped early"
	}
	fmt.Fprintf(stdout, "epochs          %d%s\n", sum.Epochs, stopped)
	fmt.Fprintf(stdout, "best val acc    %.4f (epoch %d)\n", sum.BestValAcc, sum.BestEpoch)
	fmt.Fprintf(stdout, "test acc        %.4f (at that epoch)\n", sum.TestAcc)
	fmt.Fprintf(stdout, "time per epoch  %.2f ms median (%.2f ms training step)\n", sum.EpochMsMedian, sum.StepMsMedian)
	fmt.Fprintf(stdout, "peak memory     %s RSS\n", formatBytes(sum.PeakRSSBytes))
	if sum.Parts > 1 {
		fmt.Fprintf(stdout, "workers         %d (%s partition; compute imbalance %.2f)\n", sum.Parts, sum.Partition, sum.WorkerImbalance)
		fmt.Fprintf(stdout, "sent            %s halo forward, %s halo backward, %s gradients (%s, %s)\n",
			formatBytes(sum.BytesFwd), formatBytes(sum.BytesBwd), formatBytes(sum.BytesGrad), sum.Compress, sum.Schedule)
		if distOpts.Link != nil {
			fmt.Fprintf(stdout, "emulated time   %.2f s on %s\n", sum.EmulatedSeconds, distOpts.Link)
		}
	}
	if o.save != "" {
		fmt.Fprintf(stdout, "saved           %s\n", o.save)
	}
	return nil
}

// config turns the flags into a run configuration, filling unset values from
// the model's preset.
func (o *trainOptions) config() (train.Config, nn.Storage, error) {
	p, err := train.PresetFor(o.model)
	if err != nil {
		return train.Config{}, 0, err
	}
	storage, err := nn.ParseStorage(o.features)
	if err != nil {
		return train.Config{}, 0, fmt.Errorf("--features %q: want auto, dense or sparse", o.features)
	}
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&p.Layers, o.layers)
	set(&p.Hidden, o.hidden)
	set(&p.Heads, o.heads)
	set(&p.Epochs, o.epochs)
	if o.patience >= 0 {
		p.Patience = o.patience
	}
	if o.lr != 0 {
		p.LR = o.lr
	}
	if o.weightDecay >= 0 {
		p.WeightDecay = o.weightDecay
	}
	if o.dropout >= 0 {
		p.Dropout = o.dropout
	}
	if o.normalize.set {
		p.Normalize = o.normalize.value
	}
	p.Optimizer = nn.Algorithm(o.optimizer)
	switch {
	case !slices.Contains([]nn.Algorithm{nn.Adam, nn.AdamW, nn.AMSGrad, nn.SGD}, p.Optimizer):
		return train.Config{}, 0, fmt.Errorf("--optimizer %q: want adam, adamw, amsgrad or sgd", o.optimizer)
	case p.Layers < 1 || p.Hidden < 1 || p.Heads < 1 || p.Epochs < 1:
		return train.Config{}, 0, errors.New("--layers, --hidden, --heads and --epochs must be positive")
	case p.LR < 0:
		return train.Config{}, 0, fmt.Errorf("--lr %v: want a positive learning rate", o.lr)
	case p.Dropout >= 1:
		return train.Config{}, 0, fmt.Errorf("--dropout %v: want a rate in [0, 1)", o.dropout)
	}
	cfg := p.Config(o.model, 0, o.seed)
	switch o.selectBy {
	case "acc":
	case "loss":
		cfg.SelectByLoss = true
	default:
		return train.Config{}, 0, fmt.Errorf("--select %q: want acc or loss", o.selectBy)
	}
	return cfg, storage, nil
}

// metricSinks opens the --metrics file and the --metrics-addr endpoint.
func (o *trainOptions) metricSinks(stderr io.Writer) ([]metrics.Sink, error) {
	var sinks []metrics.Sink
	if o.metricsFile != "" {
		f, err := metrics.CreateJSONLines[metrics.Epoch](o.metricsFile)
		if err != nil {
			return nil, fmt.Errorf("metrics file: %v", err)
		}
		sinks = append(sinks, f)
	}
	if o.metricsAddr != "" {
		addr, all := o.metricsAddr, false
		if host, _, err := net.SplitHostPort(addr); err == nil {
			if host == "" {
				addr = "127.0.0.1" + addr
			}
			all = host != "" // an address the user typed out, such as 0.0.0.0
		}
		p, err := metrics.ServePrometheus(addr, metrics.PrometheusOptions{AllInterfaces: all})
		if err != nil {
			for _, s := range sinks {
				s.Close()
			}
			return nil, fmt.Errorf("--metrics-addr: %v", err)
		}
		fmt.Fprintf(stderr, "serving metrics at http://%s/metrics\n", p.Addr())
		sinks = append(sinks, p)
	}
	return sinks, nil
}

// trainProgress shows training progress on stderr: a progress bar on a
// terminal, otherwise (CI logs, files) a plain line every tenth of the run.
type trainProgress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	every int
	last  metrics.Epoch
}

func newTrainProgress(w io.Writer, epochs int, title string) *trainProgress {
	p := &trainProgress{w: w, total: epochs, every: max(1, epochs/10)}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(epochs,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(title),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *trainProgress) epoch(m metrics.Epoch) {
	p.last = m
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("loss %.4f val %.4f", m.Loss, m.ValAcc))
		_ = p.bar.Set(m.Epoch)
		return
	}
	if m.Epoch%p.every == 0 || m.Epoch == 1 {
		p.line(m)
	}
}

func (p *trainProgress) line(m metrics.Epoch) {
	fmt.Fprintf(p.w, "epoch %*d/%d  loss %.4f  train %.4f  val %.4f  test %.4f  %.1f ms\n",
		len(fmt.Sprint(p.total)), m.Epoch, p.total, m.Loss, m.TrainAcc, m.ValAcc, m.TestAcc, 1000*m.EpochSeconds)
}

// finish ends the bar, or prints the last epoch if its line was skipped
// (early stopping).
func (p *trainProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	if p.last.Epoch > 0 && p.last.Epoch%p.every != 0 && p.last.Epoch != 1 {
		p.line(p.last)
	}
}

// medianOrZero is the median of xs, 0 for none (JSON has no NaN).
func medianOrZero(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

func countParams(ps []*nn.Param) int {
	n := 0
	for _, p := range ps {
		n += len(p.Value.Data)
	}
	return n
}

func formatBytes(b int64) string {
	switch {
	case b <= 0:
		return "unknown"
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	default:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
}

// optionalBool is a boolean flag that knows whether it was given, so that
// an unset flag keeps the model's preset.
type optionalBool struct{ set, value bool }

func (b *optionalBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.set, b.value = true, v
	return nil
}

func (b *optionalBool) IsBoolFlag() bool { return true }
