// Package runrecord owns the run record: what a job leaves in the run
// history (package history, the SQLite store) and how tact reads it back.
// The engine writes each job's record through a Writer; tact log, log
// show, --resume, --continue and plan --from read through a Book. The
// store keeps opaque text; this package knows what the text is (trace
// lines, steps, checkpoints, the --json result document) and turns it
// back into results, resumptions and conversations. See docs/history.md.
package runrecord
