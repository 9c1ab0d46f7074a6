// Package buildinfo carries the version stamped in by the Makefile.
package buildinfo

// Version is set with -ldflags -X by `make`.
var Version = "dev"
