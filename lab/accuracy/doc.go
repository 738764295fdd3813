// Command accuracy is an experiment tool, not part of graft or its API: it
// exists to reproduce the documentation's accuracy tables and may change
// with them. It lives under lab/, beside the other experiment tools, so that
// the product's tree holds only what graft ships.
//
// It summarises the runs of scripts/accuracy.sh: it reads one JSON object
// per line ({"config", "args", "result": graft train --json, optionally
// "min_val_loss"}) from stdin and prints a Markdown table of test accuracy,
// mean ± standard deviation over seeds, per configuration in order of first
// appearance, then, for every configuration ROW@METHOD beside a baseline
// ROW@full, ROW@none or ROW@fp32, a table pairing the two seed by seed, a
// row's methods together. -only EXPR keeps only the configurations whose
// name matches the regular expression (a baseline too must match to be
// paired with), and -paired prints only the paired tables. The pages' tables
// of checked-in runs are its output, between a marker naming the command
// and an end marker, and a test checks them (doctables_test.go):
//
//	go run ./lab/accuracy -paired -only '^gcn-' < docs/gradients/results.jsonl
//
// With -min-val-loss FILE it instead reads one graft train --metrics file and
// prints, as one JSON object, the epoch of lowest validation loss with its
// validation loss and accuracy and test accuracy: the model Shchur et al.
// (2018) select (their early stopping restores the parameters of the lowest
// validation loss), where graft train selects the best validation accuracy.
package main
