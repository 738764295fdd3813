// Package metrics is the one record of a training run's epochs and the
// places it goes.
//
// A trainer fills an [Epoch] (loss and accuracies, bytes each way,
// compute, communication and codec time, per-worker compute, memory) and
// hands it to a [Recorder], which passes it to every [Sink] and keeps the
// run's [Totals] for a final summary. Sinks:
//
//   - [JSONLines]: one JSON object per line, the format of
//     `graft train --metrics FILE`, read back by [ReadJSONLines];
//   - [Prometheus]: a /metrics endpoint on an address the caller names,
//     from a registry of its own, for watching a long run live;
//   - plots, drawn afterwards from the records rather than as a sink:
//     [Plot] draws a run's curves, accuracy against bytes and against
//     emulated time, and per-worker compute as PNG or SVG; [PlotPanels]
//     draws any [Panel] of [Series] the same way (a log x axis, a chosen
//     start of the y axis, wide lines, a legend beside the chart), which
//     is how the decentralised trainer plots its metric against rounds
//     and lab/varco its accuracy against bytes and time.
//
// [Balance] describes how evenly work is spread over workers: coefficient
// of variation, max/mean imbalance and efficiency of part sizes and of
// per-worker compute time. [ResidentBytes] reads the process's resident
// memory for Epoch.RSSBytes.
//
// The JSON-lines writer and reader are generic ([NewJSONLinesOf],
// [ReadJSONLinesOf]) so other record types, such as the decentralised
// trainer's evaluations, share their framing and their line-numbered
// errors.
package metrics
