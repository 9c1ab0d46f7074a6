package runrecord

import (
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
)

// Termination is how a job ended that the executor did not end (it could
// not open, plan or start): the engine makes it from its error
// (agent.TerminationOf, the one place an error becomes a reason), and the
// trace's termination event and the record's result document are both
// written from it here.
type Termination struct {
	Reason   react.Reason
	ExitCode int
	Message  string // the error, as the caller redacted it; "" on success
}

// Success reports whether the job ended without an error.
func (t Termination) Success() bool { return t.Reason == react.ReasonSuccess }

// Event is the termination trace event's fields.
func (t Termination) Event(usage llm.Usage) map[string]any {
	f := map[string]any{"token_usage": usage, "reason": t.Reason, "exit_code": t.ExitCode, "success": t.Success()}
	if !t.Success() {
		f["message"] = t.Message
	}
	return f
}

// Document is the result document of run id that ended so: the shape
// --json's result has, as log show prints it.
func (t Termination) Document(id string) []byte {
	b, _ := text.JSON(map[string]any{"run_id": id, "success": false, "final_answer": "",
		"termination_reason": t.Reason, "message": t.Message}) // strings and a bool always encode
	return b
}
