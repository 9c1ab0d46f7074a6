package runrecord

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/text"
)

// jsonRecord is a run in tact log --json: every field of history.Record.
type jsonRecord struct {
	ID            string          `json:"id"`
	ParentID      string          `json:"parent_id"`
	ResumedFrom   string          `json:"resumed_from"`
	Command       string          `json:"command"`
	Workspace     string          `json:"workspace"`
	Query         string          `json:"query"`
	Plan          json.RawMessage `json:"plan"`
	Backend       string          `json:"backend"`
	Model         string          `json:"model"`
	Settings      json.RawMessage `json:"settings"`
	StartedAt     string          `json:"started_at"`
	Ended         bool            `json:"ended"`
	EndedAt       *string         `json:"ended_at"` // null: never ended
	Answer        string          `json:"answer"`
	Reason        string          `json:"reason"`
	ExitCode      *int            `json:"exit_code"` // null: never ended
	TokenUsage    jsonUsage       `json:"token_usage"`
	Steps         int             `json:"steps"`
	DurationMS    int64           `json:"duration_ms"`
	Result        json.RawMessage `json:"result"`
	DroppedEvents int64           `json:"dropped_events"`
}

type jsonUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
}

func newJSONRecord(r history.Record) jsonRecord {
	out := jsonRecord{
		ID: r.ID, ParentID: r.ParentID, ResumedFrom: r.ResumedFrom, Command: r.Command, Workspace: r.Workspace,
		Query: r.Query, Plan: embedJSON(r.Plan), Backend: r.Backend, Model: r.Model, Settings: embedJSON(r.Settings),
		StartedAt: r.StartedAt.UTC().Format(time.RFC3339Nano), Ended: r.Ended, Answer: r.Answer, Reason: r.Reason,
		TokenUsage: jsonUsage{PromptTokens: r.Usage.Prompt, CompletionTokens: r.Usage.Completion, CachedTokens: r.Usage.Cached},
		Steps:      r.Steps, DurationMS: r.Duration.Milliseconds(), Result: embedJSON(r.Result), DroppedEvents: r.DroppedEvents,
	}
	if r.Ended {
		ended, code := r.EndedAt.UTC().Format(time.RFC3339Nano), r.ExitCode
		out.EndedAt, out.ExitCode = &ended, &code
	}
	return out
}

// embedJSON is stored JSON text as a value of the line: null when empty,
// compacted (a JSONL line has no newline), and a JSON string when the text
// is not JSON (the store keeps what it was given).
func embedJSON(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("null")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err == nil {
		return b.Bytes()
	}
	q, _ := text.JSON(s) // a string always encodes
	return q
}

// WriteJSONL writes recs as tact log --json prints them: one JSON object a
// run and line, with every recorded field.
func WriteJSONL(w io.Writer, recs []history.Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(newJSONRecord(r)); err != nil {
			return err
		}
	}
	return nil
}
