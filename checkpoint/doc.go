// Package checkpoint saves and restores everything a training run needs to
// continue exactly: named float32 tensors (parameters, optimiser moments)
// and a JSON document for the rest (epoch, schedule and random state,
// configuration). Each checkpoint names the run it belongs to and records
// that run's settings with their hash (ConfigHash), so that a directory is
// never shared by two runs (Claim) and a resume can check its settings.
//
// A checkpoint is one file written atomically: to a temporary file in the
// same directory, synced, renamed into place, and the directory synced, so a
// crash leaves either the old checkpoint or the new one, never half of one.
// The file ends with a SHA-256 of its contents, checked on load: a corrupt or
// truncated file is refused with a message saying so, and the previous good
// checkpoint is used instead.
package checkpoint
