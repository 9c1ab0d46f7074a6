// Package procsafe holds the process-wide protections every tact process
// (tact itself, its sandbox helper, the helper's first stage, the jq
// evaluator) applies before it starts anything: descriptors it inherited
// are not passed on, and its memory and environment are not readable by
// other processes of the same user.
//
// Its init applies them, and the packages that start processes import it,
// so a binary linking any of them is protected before main runs (and
// before a re-executed child's own init serves it). Seal is called again
// right before each start, for descriptors that C code (llama.cpp) opened
// without O_CLOEXEC after init.
package procsafe

// firstSealed: stdin, stdout and stderr are the only descriptors a child
// gets without being handed them explicitly.
const firstSealed = 3

var sealErr, dumpableErr error

func init() {
	sealErr = Seal()
	dumpableErr = notDumpable()
}

// Status reports whether init could seal the inherited descriptors and
// make the process non-dumpable (nil: it did).
func Status() (seal, dumpable error) { return sealErr, dumpableErr }

// Seal marks every descriptor from 3 up close-on-exec. Go opens its own
// descriptors that way; the ones left are those tact inherited (the cron
// idiom `exec 9>/var/lock/job.lock; flock 9; tact ...` leaves fd 9 open for
// writing) and those C code opened. Marking a close-on-exec descriptor
// again is harmless, and files handed to a child on purpose (os/exec's
// ExtraFiles, os.ProcAttr.Files) are dup'ed in the child after the fork, so
// they still arrive.
func Seal() error { return seal() }

// HideEnviron overwrites, in the environment block the kernel shows as
// /proc/PID/environ, the value of every variable hide reports true for.
// A root command can read that file even when the process is not
// dumpable and the command holds no CAP_SYS_PTRACE, so secrets (API keys,
// the serve token) must not stay there. Go copied the environment at
// start, so os.Getenv still sees the values; C code's getenv sees the
// hidden ones as empty.
func HideEnviron(hide func(name, value string) bool) error { return hideEnviron(hide) }
