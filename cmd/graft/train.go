package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/job"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
)

func init() {
	commands["train"] = command{"train a GNN, full-graph or on sampled mini-batches (default: GCN on the embedded Cora)", runTrain}
}

// trainOptions are the flags of graft train. Settings left unset take the
// recipe's values (train.RecipeFor; recipe.go).
type trainOptions struct {
	dataset, split, model, dataDir string
	files                          dataset.NodeFiles
	recipeName                     string
	recipe                         train.Recipe // resolved by applyRecipe
	layers, hidden, heads, epochs  int
	patience                       int
	selectBy, metric               string
	lr, weightDecay, dropout       float64
	optimizer, features            string
	rowNormalize, lcc              bool
	normalize                      optionalBool
	seed                           uint64
	save, metricsFile, metricsAddr string
	saveFormat                     string
	sampler, evalSampler           string
	precision                      string
	batchSize, evalEvery           int
	accumulate                     int
	cpuProfile                     string
	asJSON                         bool
	dist                           distOptions
	async                          asyncOptions
	pipeline                       pipelineOptions
	worker                         workerOptions // multi-process runs (train_worker.go)
}

func newTrainFlags(o *trainOptions) *flag.FlagSet {
	fs := newFlagSet("train")
	fs.StringVar(&o.dataset, "dataset", "cora", "dataset name ("+strings.Join(dataset.KnownNames(), ", ")+") or path")
	fs.StringVar(&o.recipeName, "recipe", "auto", recipeUsage())
	fs.StringVar(&o.split, "split", "", "split (default: the recipe's): auto (the dataset's own, else a seeded stratified "+dataset.AutoStratified+"), public, public:K, geom-gcn:K, random:T:V, frac:T:V or file:PATH[:K]")
	fs.StringVar(&o.model, "model", "gcn", "model: gcn, sage or gat")
	fs.StringVar(&o.dataDir, "data-dir", "", "data directory for named datasets (default $"+dataset.DataDirEnv+")")
	o.features = ""
	registerNodeFiles(fs, &o.files, &o.features)
	fs.IntVar(&o.layers, "layers", 0, "number of layers (default: the recipe's, 2)")
	fs.IntVar(&o.hidden, "hidden", 0, "hidden width, per head for GAT (default: the recipe's)")
	fs.IntVar(&o.heads, "heads", 0, "GAT attention heads of hidden layers (default: the recipe's, 8)")
	fs.IntVar(&o.epochs, "epochs", 0, "maximum epochs (default: the recipe's)")
	fs.StringVar(&o.sampler, "sampler", "", "train on sampled mini-batches instead of the whole graph (with --parts N, data-parallel over the parts, each worker sampling from its own part; see docs/minibatch.md): "+strings.Join(sample.Forms(), "; "))
	fs.IntVar(&o.batchSize, "batch-size", 1024, "seeds per mini-batch with --sampler (per worker with --parts: N workers train on batches of N·B)")
	fs.StringVar(&o.evalSampler, "eval-sampler", "", "with --sampler: evaluate on batches of --batch-size labelled nodes drawn by this seed-driven sampler (neighbor, fastgcn, ladies), the same batches every time, instead of exactly over whole neighbourhoods; it bounds evaluation's memory to one batch")
	fs.StringVar(&o.precision, "precision", "fp32", "fp32, or bf16 to hold the dense features in bfloat16 (half their bytes) and, full-graph, the layers' projections and the halo exchange's forward rows (docs/training.md), or, with --sampler, exact evaluation's stored layers (docs/minibatch.md), and to multiply in training on the CPU's bf16 instructions where they outpace float32 (AMX, AVX512_BF16 on AMD; data-parallel workers, --sampler with --parts, multiply in float32); parameters, optimiser state, gradients and sums stay float32")
	fs.IntVar(&o.evalEvery, "eval-every", 1, "evaluate every `K` epochs (and after the last); model selection sees only the evaluated epochs")
	fs.IntVar(&o.accumulate, "accumulate", 1, "sum the gradients of `K` micro-batches per optimiser step (K batches of B seeds step as one of K·B)")
	fs.StringVar(&o.selectBy, "select", "", "model selection (default: the recipe's): acc keeps the epoch of the best validation --metric; loss keeps the epoch of lowest validation loss and counts patience on the loss (Shchur et al.)")
	fs.StringVar(&o.metric, "metric", "acc", "validation metric that model selection and patience follow with --select acc: acc (accuracy), auc (ROC-AUC, binary tasks) or f1 (macro-F1)")
	fs.IntVar(&o.patience, "patience", 0, "stop after this many epochs without a new best validation score or loss; 0 never stops early; with --compress it counts from the epoch the schedule reaches its final ratio (default: the recipe's)")
	fs.Float64Var(&o.lr, "lr", 0, "learning rate (default: the recipe's)")
	fs.Float64Var(&o.weightDecay, "weight-decay", 0, "weight decay, on the first layer only for GCN and GraphSAGE (default: the recipe's)")
	fs.Float64Var(&o.dropout, "dropout", 0, "dropout rate, for GAT also on attention (default: the recipe's)")
	fs.StringVar(&o.optimizer, "optimizer", "adam", "optimizer: adam, adamw, amsgrad or sgd")
	fs.BoolVar(&o.rowNormalize, "row-normalize", false, "scale each node's features to sum to 1 (Kipf and Welling's preprocessing of bag-of-words counts; features with negative values are left as they are) (default: the recipe's)")
	fs.Var(&o.normalize, "normalize", "scale every hidden layer's output to unit L2 norm per node (GraphSAGE's normalisation)")
	fs.BoolVar(&o.lcc, "lcc", false, "keep only the largest connected component (Shchur et al.'s preprocessing) (default: the recipe's)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of initialisation, dropout and random splits")
	fs.StringVar(&o.save, "save", "", "write the best parameters to `FILE` (safetensors, with the settings graft evaluate and graft predict need)")
	fs.StringVar(&o.saveFormat, "save-format", "torch", "key names of --save: torch (graft's layers.I.weight, ...) or pyg (a PyTorch Geometric model's convs.I of GCNConv, SAGEConv or GATConv loads them with strict=True; see docs/predict.md)")
	fs.StringVar(&o.metricsFile, "metrics", "", "write one JSON object per epoch to `FILE`")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics (graft_epoch, graft_loss, graft_bytes_total, …) at http://`HOST:PORT`/metrics during the run; HOST defaults to 127.0.0.1")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON summary on stdout instead of the text summary")
	o.dist.register(fs)
	o.async.register(fs)
	o.pipeline.register(fs)
	o.worker.register(fs)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		o.printRecipeInForce(fs.Output())
	}
	return fs
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	var o trainOptions
	fs := newTrainFlags(&o)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		if _, err := strconv.ParseFloat(fs.Arg(0), 64); err == nil && flagSet(fs, "rebalance") {
			return usageError{fmt.Errorf("unexpected argument %q; a threshold goes with the flag: --rebalance=%s", fs.Arg(0), fs.Arg(0))}
		}
		return usageError{fmt.Errorf("unexpected argument %q; all settings are flags (see 'graft train -h')", fs.Arg(0))}
	}
	spec, err := o.spec(fs)
	if err != nil {
		return err
	}
	progressOut := stderr
	if spec.Place.Rank != 0 { // as one worker of a job, only rank 0 reports
		progressOut = io.Discard
	}
	for _, note := range unusedFlags(fs, spec) {
		fmt.Fprintf(progressOut, "graft train: %s\n", note)
	}
	progress := newTrainProgress(progressOut, spec.Train.Epochs, fmt.Sprintf("%s %s", o.model, o.dataset))
	spec.Progress, spec.BatchProgress, spec.Log = failAt(spec.Place.Rank, progress.epoch), progress.batch, stderr
	if err := spec.CheckOutputs(); err != nil { // before the profile is created
		return err
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(stderr, spec.Place.Size > 1, stopProfile, progress.begin)
	defer stop()
	sum, err := job.Run(ctx, spec)
	stopProfile()
	progress.finish()
	switch {
	case job.IsSpecError(err):
		return usageError{err}
	case err != nil:
		return err
	case !sum.Leader:
		return nil
	case o.asJSON:
		return json.NewEncoder(stdout).Encode(sum)
	}
	printSummary(stdout, sum)
	return nil
}

// spec turns the flags into the job they describe.
func (o *trainOptions) spec(fs *flag.FlagSet) (job.Spec, error) {
	if err := o.applyRecipe(fs); err != nil {
		return job.Spec{}, err
	}
	cfg, storage, err := o.config(fs)
	if err != nil {
		return job.Spec{}, usageError{err}
	}
	place, err := o.worker.resolve(fs, &o.dist)
	if err != nil {
		return job.Spec{}, err
	}
	if o.worker.partDir != "" {
		for _, name := range dataFlags {
			if flagSet(fs, name) {
				return job.Spec{}, usageError{fmt.Errorf("--%s: the data and its partition come from --part-dir %s (see its manifest.json)", name, o.worker.partDir)}
			}
		}
	}
	asyncSpec, err := o.async.spec(fs)
	if err != nil {
		return job.Spec{}, usageError{err}
	}
	pipelineSpec, err := o.pipeline.spec(fs, o.async.mode)
	if err != nil {
		return job.Spec{}, usageError{err}
	}
	d := &o.dist
	s := job.Spec{Async: asyncSpec, Pipeline: pipelineSpec,
		Dataset: o.dataset, DataDir: o.dataDir, Files: o.files, Recipe: o.recipe.Name, RecipeNote: o.recipeNote(fs), Split: o.split, LCC: o.lcc, RowNormalize: o.rowNormalize, Features: storage,
		PartDir: o.worker.partDir, Train: cfg,
		Partition: d.partition, PartitionSeed: d.partitionSeed, Codec: d.codec, Schedule: d.schedule, CompressLast: d.compressLast, EvalCodec: d.evalCompress, Link: d.link, GradCompress: d.gradCompress,
		Rebalance:     float64(d.rebalance),
		CheckpointDir: d.checkpointDir, CheckpointEvery: d.checkpointEvery, Resume: d.resume, ResumeAllow: strings.FieldsFunc(d.resumeAllow, func(r rune) bool { return r == ',' || r == ' ' }),
		Save: o.save, SaveFormat: o.saveFormat, MetricsFile: o.metricsFile, MetricsAddr: o.metricsAddr,
		Sampler: o.sampler, BatchSize: o.batchSize, EvalSampler: o.evalSampler, Precision: o.precision,
		Place: place, Launch: o.worker.flags,
	}
	if !flagSet(fs, "compress") {
		s.Codec = "" // not named: --schedule or --compress-last alone select auto
	}
	if flagSet(fs, "parts") || o.worker.partDir == "" {
		if d.parts < 1 {
			return job.Spec{}, usageError{fmt.Errorf("--parts %d: want at least 1", d.parts)}
		}
		s.Parts = d.parts
	}
	return s, nil
}

// unusedFlags names the flags given that the run does not use, each with
// the flag that would make it act: a run trains as it would without them,
// and should not do so in silence.
func unusedFlags(fs *flag.FlagSet, s job.Spec) []string {
	var notes []string
	given := func(name string) string {
		return "--" + name + " " + fs.Lookup(name).Value.String()
	}
	if s.Sampler == "" {
		for _, name := range []string{"batch-size", "accumulate"} {
			if flagSet(fs, name) {
				notes = append(notes, given(name)+" has no effect without --sampler: full-graph training takes one step an epoch on the whole graph (add --sampler, e.g. neighbor:10,10, to train on mini-batches)")
			}
		}
	}
	if flagSet(fs, "checkpoint-every") && s.CheckpointDir == "" && s.Resume == "" {
		notes = append(notes, given("checkpoint-every")+" has no effect without --checkpoint-dir DIR: nothing is checkpointed")
	}
	if every := s.CheckpointEvery; s.CheckpointDir != "" && s.Resume == "" && every > s.Train.Epochs {
		notes = append(notes, fmt.Sprintf("--checkpoint-every %d is more than the run's %d epochs: it checkpoints only if interrupted (SIGINT or SIGTERM); give --checkpoint-every N of at most %d for checkpoints as it trains", every, s.Train.Epochs, s.Train.Epochs))
	}
	if flagSet(fs, "resume-allow") && s.Resume == "" {
		notes = append(notes, given("resume-allow")+" has no effect without --resume DIR: the run starts afresh")
	}
	return notes
}

// printSummary writes the text summary of a job.
func printSummary(w io.Writer, sum job.Summary) {
	precision := ""
	if sum.Precision == "bf16" {
		precision = ", precision bf16"
	}
	fmt.Fprintf(w, "%s on %s (%s split, %s features%s, %d parameters)\n", sum.Model, sum.Dataset, sum.Split, sum.Features, precision, sum.Parameters)
	stopped := ""
	if sum.StoppedEarly {
		stopped = ", stopped early"
	}
	fmt.Fprintf(w, "epochs          %d%s\n", sum.Epochs, stopped)
	switch {
	case sum.Metric == "f1":
		fmt.Fprintf(w, "best val F1     %.4f (epoch %d; acc %.4f)\n", sum.BestValMacroF1, sum.BestEpoch, sum.BestValAcc)
	case sum.Metric == "auc" && sum.BestValAUC != nil:
		fmt.Fprintf(w, "best val AUC    %.4f (epoch %d; acc %.4f)\n", *sum.BestValAUC, sum.BestEpoch, sum.BestValAcc)
	default:
		fmt.Fprintf(w, "best val acc    %.4f (epoch %d)\n", sum.BestValAcc, sum.BestEpoch)
	}
	fmt.Fprintf(w, "test acc        %.4f (at that epoch)\n", sum.TestAcc)
	fmt.Fprintf(w, "test macro-F1   %.4f\n", sum.TestMacroF1)
	if sum.TestAUC != nil {
		fmt.Fprintf(w, "test ROC-AUC    %.4f\n", *sum.TestAUC)
	}
	fmt.Fprintf(w, "time per epoch  %.2f ms median (%.2f ms training step)\n", sum.EpochMsMedian, sum.StepMsMedian)
	fmt.Fprintf(w, "peak memory     %s RSS", formatBytes(sum.PeakRSSBytes))
	if m := sum.Memory; m != nil {
		mib := func(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
		fmt.Fprintf(w, " (MiB: graph %s, features %s, parameters %s, activations %s, communication %s, rest %s)",
			mib(m.Graph), mib(m.Features), mib(m.Parameters), mib(m.Activations), mib(m.Communication), mib(m.Rest))
	}
	fmt.Fprintln(w)
	if m := sum.FeaturesMapped; m != nil {
		hit := "unknown"
		if m.HitRate != nil {
			hit = fmt.Sprintf("%.4f", *m.HitRate)
		}
		read := "nothing"
		if m.StorageReadBytes > 0 {
			read = formatBytes(m.StorageReadBytes)
		}
		fmt.Fprintf(w, "mapped features %s (%s, %s): batches touched %s of its pages, %s read from storage (page-cache hit rate %s); RSS at the end %s own, %s file pages\n",
			m.File, m.DType, formatBytes(m.Bytes), formatBytes(m.TouchedBytes), read, hit, formatBytes(m.RSSAnonBytes), formatBytes(m.RSSFileBytes))
	}
	if sum.Parts > 1 {
		fmt.Fprintf(w, "workers         %d (%s partition; compute imbalance %.2f)\n", sum.Parts, sum.Partition, sum.WorkerImbalance)
		halo, coded := "no halo traffic", "halo"
		switch {
		case sum.Sampler != "":
			halo = formatBytes(sum.BytesSetup) + " at setup, " + formatBytes(sum.BytesStructure) + " sampled structure, " + formatBytes(sum.BytesFeatures) + " features"
			coded = "features" // --compress codes the fetched feature rows
		case sum.BytesFwd+sum.BytesBwd > 0:
			halo = formatBytes(sum.BytesFwd) + " halo forward, " + formatBytes(sum.BytesBwd) + " halo backward"
		}
		grad := cmp.Or(sum.GradCompress, "none")
		fmt.Fprintf(w, "sent            %s, %s gradients (%s %s, %s; gradients %s)\n", halo, formatBytes(sum.BytesGrad), coded, sum.Compress, sum.Schedule, grad)
		if sum.Link != "" {
			fmt.Fprintf(w, "emulated time   %.2f s on %s\n", sum.EmulatedSeconds, sum.Link)
		}
		printRebalances(w, sum.Rebalances)
	}
	printAsync(w, sum)
	printPipeline(w, sum)
	if sum.Saved != "" {
		fmt.Fprintf(w, "saved           %s\n", sum.Saved)
	}
}

// printRebalances lists the re-partitions of a run with --rebalance.
func printRebalances(w io.Writer, rs *[]fullgraph.Record) {
	switch {
	case rs == nil:
		return
	case len(*rs) == 0:
		fmt.Fprintf(w, "rebalanced      no: the compute imbalance stayed within the threshold\n")
	}
	for _, r := range *rs {
		after := "not measured"
		if r.WindowAfter != nil {
			after = fmt.Sprintf("%.2f", r.ImbalanceAfter)
		}
		fmt.Fprintf(w, "rebalanced      after epoch %d: imbalance %.2f, then %s (predicted %.2f); %d nodes moved\n",
			r.Epoch, r.ImbalanceBefore, after, r.ImbalancePredicted, r.NodesMoved)
	}
}

// config turns the flags into a run configuration, filling unset values from
// the recipe's preset of the model.
func (o *trainOptions) config(fs *flag.FlagSet) (train.Config, nn.Storage, error) {
	p := o.recipe.Preset
	storage, err := nn.ParseStorage(o.features)
	if err != nil {
		return train.Config{}, 0, fmt.Errorf("--features %q: want auto, dense or sparse", o.features)
	}
	if err := o.applyPreset(fs, &p); err != nil {
		return train.Config{}, 0, err
	}
	p.Optimizer = nn.Algorithm(o.optimizer)
	if !slices.Contains([]nn.Algorithm{nn.Adam, nn.AdamW, nn.AMSGrad, nn.SGD}, p.Optimizer) {
		return train.Config{}, 0, fmt.Errorf("--optimizer %q: want adam, adamw, amsgrad or sgd", o.optimizer)
	}
	cfg := p.Config(o.model, 0, o.seed)
	if o.evalEvery < 1 {
		return train.Config{}, 0, fmt.Errorf("--eval-every %d: want 1 or more (evaluate every K epochs)", o.evalEvery)
	}
	if o.accumulate < 1 {
		return train.Config{}, 0, fmt.Errorf("--accumulate %d: want 1 or more (micro-batches per optimiser step)", o.accumulate)
	}
	cfg.EvalEvery, cfg.Accumulate = o.evalEvery, o.accumulate
	switch o.selectBy {
	case "acc":
	case "loss":
		cfg.SelectByLoss = true
	default:
		return train.Config{}, 0, fmt.Errorf("--select %q: want acc or loss", o.selectBy)
	}
	if cfg.Metric, err = train.ParseMetric(o.metric); err != nil {
		return train.Config{}, 0, fmt.Errorf("--metric %q: want acc, auc or f1", o.metric)
	}
	return cfg, storage, nil
}

// trainProgress shows training progress on stderr: a progress bar on a
// terminal, otherwise (CI logs, files) a plain line every tenth of the run.
// Its methods may be called from any goroutine.
type trainProgress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	every int
	last  metrics.Epoch
	// The current epoch's start, when a line about its batches was last
	// printed (long mini-batch epochs report every batchEvery) and when
	// any line was.
	epochStart, batchLine, lastLine time.Time
	// The heartbeat's goroutine, from begin to finish, and the first
	// epoch it saw start (a resumed run's is past 1).
	stop, stopped chan struct{}
	first         int
}

var batchEvery = 10 * time.Second

// heartbeatAfter is how long an epoch may run without a line before one
// says it is still at work: a full-graph epoch of a large graph, or the
// exact evaluation after it, takes minutes with nothing else to report.
var heartbeatAfter = 30 * time.Second

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

// begin notes that training has started at epoch first (train.WithBegan;
// every worker of an in-process run calls it) and starts the heartbeat.
func (p *trainProgress) begin(first int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		return
	}
	p.first = first
	p.epochStart, p.batchLine = time.Now(), time.Now()
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go p.heartbeat(p.stop, p.stopped)
}

// heartbeat says how long the epoch under way has run when nothing has
// been printed about it for heartbeatAfter.
func (p *trainProgress) heartbeat(stop, stopped chan struct{}) {
	defer close(stopped)
	tick := time.NewTicker(max(heartbeatAfter/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			p.mu.Lock()
			if quiet := p.epochStart; !quiet.IsZero() {
				if p.lastLine.After(quiet) {
					quiet = p.lastLine
				}
				if now.Sub(quiet) >= heartbeatAfter {
					p.say(p.underWay(now))
				}
			}
			p.mu.Unlock()
		}
	}
}

// underWay describes the epoch under way at now, or after the run's last
// epoch what follows it (the final evaluation, saving).
func (p *trainProgress) underWay(now time.Time) string {
	took := now.Sub(p.epochStart).Seconds()
	switch {
	case p.last.Epoch == 0:
		return fmt.Sprintf("epoch %d: %.0f s so far", p.first, took)
	case p.last.Epoch >= p.total:
		return fmt.Sprintf("after the last epoch: %.0f s so far", took)
	}
	return fmt.Sprintf("epoch %d: %.0f s so far", p.last.Epoch+1, took)
}

// say shows msg: the bar's description on a terminal, else a line.
func (p *trainProgress) say(msg string) {
	p.lastLine = time.Now()
	if p.bar != nil {
		p.bar.Describe(msg)
		return
	}
	fmt.Fprintln(p.w, msg)
}

// batch notes mini-batch progress: a line every batchEvery of an epoch
// (the bar, on a terminal, says how many batches are done).
func (p *trainProgress) batch(epoch, done, batches int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.epochStart.IsZero() {
		p.epochStart, p.batchLine = now, now
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("epoch %d: batch %d/%d", epoch, done, batches))
		p.lastLine = now
		return
	}
	if now.Sub(p.batchLine) >= batchEvery && done < batches {
		p.batchLine = now
		p.say(fmt.Sprintf("epoch %d: batch %d/%d, %.0f s", epoch, done, batches, now.Sub(p.epochStart).Seconds()))
	}
}

func (p *trainProgress) epoch(m metrics.Epoch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = m
	p.epochStart, p.batchLine = time.Now(), time.Now() // the next epoch's
	if p.bar != nil {
		if m.Evaluated {
			p.bar.Describe(fmt.Sprintf("loss %.4f val %.4f", m.Loss, m.ValAcc))
		} else {
			p.bar.Describe(fmt.Sprintf("loss %.4f not evaluated", m.Loss))
		}
		_ = p.bar.Set(m.Epoch)
		return
	}
	if m.Epoch%p.every == 0 || m.Epoch == 1 {
		p.line(m)
	}
}

// line prints epoch m's line: its accuracies where it was evaluated, and
// "not evaluated" where --eval-every skipped it (its record carries the
// last evaluation's).
func (p *trainProgress) line(m metrics.Epoch) {
	scores := "not evaluated"
	if m.Evaluated {
		scores = fmt.Sprintf("train %.4f  val %.4f  test %.4f", m.TrainAcc, m.ValAcc, m.TestAcc)
	}
	p.say(fmt.Sprintf("epoch %*d/%d  loss %.4f  %s  %.1f ms", len(fmt.Sprint(p.total)), m.Epoch, p.total, m.Loss, scores, 1000*m.EpochSeconds))
}

// finish stops the heartbeat and ends the bar, or prints the last epoch if
// its line was skipped (early stopping).
func (p *trainProgress) finish() {
	p.mu.Lock()
	stop, stopped := p.stop, p.stopped
	p.stop = nil
	p.epochStart = time.Time{}
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	if p.last.Epoch > 0 && p.last.Epoch%p.every != 0 && p.last.Epoch != 1 {
		p.line(p.last)
	}
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
