// Command accuracy is an experiment tool, not part of graft or its API: it
// exists to reproduce README.md's accuracy table and may change with that
// table. It lives under lab/, beside the other experiment tools, so that
// the product's tree holds only what graft ships.
//
// It summarises the runs of scripts/accuracy.sh: it reads one JSON object
// per line ({"config", "args", "result": graft train --json, optionally
// "min_val_loss"}) from stdin and prints a Markdown table of test accuracy,
// mean ± standard deviation over seeds, per configuration in order of first
// appearance.
//
// With -min-val-loss FILE it instead reads one graft train --metrics file and
// prints, as one JSON object, the epoch of lowest validation loss with its
// validation loss and accuracy and test accuracy: the model Shchur et al.
// (2018) select (their early stopping restores the parameters of the lowest
// validation loss), where graft train selects the best validation accuracy.
package main
