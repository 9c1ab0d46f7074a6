package react

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/schema"
)

// fallback ends the run with an answer synthesized from what was observed:
// one model call, or without a model a plain summary of the steps.
func (r *run) fallback(reason Reason, msg string) {
	if r.answerV != nil {
		r.fallbackShaped(reason, msg)
		return
	}
	answer := ""
	if llm.HasModel(r.e.Backend) && r.ctx.Err() == nil && reason != ReasonTokenBudget {
		req, err := r.prepare(llm.KindFallback, llm.Message{Role: llm.RoleUser, Content: prompt.Render("fallback", prompt.Fallback{Query: r.query, Reason: "Stopping: " + msg + "."})})
		var resp llm.Response
		if err == nil {
			resp, err = r.send(req, schema.Fallback)
			r.addUsage(resp.Usage)
		}
		if err == nil {
			var fa struct {
				Answer string `json:"answer"`
			}
			if json.Unmarshal([]byte(resp.Text), &fa) == nil && strings.TrimSpace(fa.Answer) != "" {
				answer = fa.Answer
			}
		} else {
			r.e.Log.Warn("fallback answer failed; using a plain summary", "err", err)
		}
	}
	if answer == "" {
		answer = r.summary()
	}
	r.emit(EventFallback, map[string]any{"reason": reason, "message": msg, "answer": answer})
	r.end(reason, answer, msg)
}

// fallbackShaped is fallback under an answer schema: the model's answer
// is asked for in the schema's shape and must validate, as must the
// summary without a model (a schema that takes a string); when none does,
// the run ends with ReasonInvalidAnswer, naming the budget that ended it.
func (r *run) fallbackShaped(reason Reason, msg string) {
	var answer json.RawMessage
	var verr error
	if llm.HasModel(r.e.Backend) && r.ctx.Err() == nil && reason != ReasonTokenBudget {
		req, err := r.prepare(llm.KindFallback, llm.Message{Role: llm.RoleUser, Content: prompt.Render("fallback", prompt.Fallback{Query: r.query, Reason: "Stopping: " + msg + "."})})
		var resp llm.Response
		if err == nil {
			resp, err = r.send(req, schema.FallbackAnswer(r.e.AnswerSchema))
			r.addUsage(resp.Usage)
		}
		if err == nil {
			var fa struct {
				Answer json.RawMessage `json:"answer"`
			}
			if err = json.Unmarshal([]byte(resp.Text), &fa); err == nil {
				answer, verr = r.checkAnswer(fa.Answer)
			}
		}
		if err != nil {
			r.e.Log.Warn("fallback answer failed", "err", err)
			verr = err
		}
	}
	if answer == nil {
		var err error
		if answer, err = r.shapeAnswer(r.summary()); err != nil && verr == nil {
			verr = err
		}
	}
	if answer == nil {
		r.emit(EventFallback, map[string]any{"reason": reason, "message": msg, "answer": nil, "answer_error": verr.Error()})
		r.endInvalidAnswer(msg+"; no answer that validates against the answer schema", verr)
		return
	}
	r.emit(EventFallback, map[string]any{"reason": reason, "message": msg, "answer": json.RawMessage(answer)})
	r.end(reason, string(answer), msg)
}

// summary is the model-free fallback answer.
func (r *run) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "No final answer for %q. ", r.query)
	if len(r.records) == 0 {
		if n := len(r.res.Trace.Steps); n > 0 && r.res.Trace.Steps[n-1].Observation == "interrupted" {
			fmt.Fprintf(&b, "No tool run finished: %s was interrupted.", r.res.Trace.Steps[n-1].Action.Tool)
			return b.String()
		}
		b.WriteString("No tool ran.")
		return b.String()
	}
	fmt.Fprintf(&b, "Steps run:\n")
	for _, rec := range r.records {
		status := "ok"
		if rec.Error != nil {
			status = "failed: " + text.Clip(firstLine(*rec.Error), 300)
		}
		// Arguments cut as the run display cuts them: a denied 1 MB
		// write_file is a line here, not a megabyte on stdout.
		fmt.Fprintf(&b, "%d. %s %s: %s\n", rec.Step, rec.Tool, text.ClipArgs(rec.Args, 60), status)
	}
	last := r.records[len(r.records)-1]
	if out := strings.TrimSpace(last.Output); out != "" {
		fmt.Fprintf(&b, "Last output:\n%s", r.truncate(out))
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstLine(s string) string { return text.FirstLine(s) }

// truncate cuts text to about MaxObservationTokens tokens (4 bytes a token),
// keeping head and tail and saying how much was cut.
func (r *run) truncate(s string) string {
	limit := r.e.MaxObservationTokens * 4
	if len(s) <= limit {
		return s
	}
	// The cuts keep runes and secrets whole: a secret split here would
	// leave parts that redaction no longer recognises.
	var red *redact.Redactor
	if r.e.Env != nil {
		red = r.e.Env.Redactor
	}
	head := red.CutBefore(s, limit*3/4)
	ts := red.CutAfter(s, len(s)-(limit-limit*3/4))
	cut := ts - head
	return fmt.Sprintf("%s\n[... %d bytes (~%d tokens) cut ...]\n%s", s[:head], cut, (cut+3)/4, s[ts:])
}
