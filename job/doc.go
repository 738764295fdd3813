// Package job runs a training job as `graft train` describes it: it loads
// the dataset (or a worker's stored part), splits and partitions it, trains
// in this process (one goroutine per part) or as one worker of a
// multi-process job, writes and resumes checkpoints, records metrics (a
// JSON-lines file, a Prometheus endpoint), saves the model, and returns a
// summary. The command is flag parsing and one call to Run; a program can
// run the same jobs with a Spec of its own. LoadSaved reads a saved model
// back, with the ModelInfo its file records, and prepares its dataset as
// the run did, for graft evaluate and graft predict.
package job
