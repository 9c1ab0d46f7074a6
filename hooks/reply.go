package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tactcli/tact/internal/text"
)

// reply is what a hook that exited 0 said on stdout.
type reply struct {
	decision string // "", DecisionBlock or DecisionApprove
	reason   string
	context  string
}

// errCutReply: the hook wrote more than tact keeps of its stdout.
var errCutReply = errors.New("its reply was cut")

// judgeReply is parseReply over what was kept of a hook's stdout; cut says
// more was written. What was dropped may have said anything (a block after
// 64 KiB of blanks), so a cut reply is unknown and an error (a PreToolUse
// hook then fails closed), except a RunStart hook's plain text, which is
// only context and is capped anyway.
func judgeReply(ev Event, stdout []byte, cut bool) (reply, error) {
	if cut {
		t := bytes.TrimSpace(stdout)
		if ev != RunStart || len(t) == 0 || t[0] == '{' {
			return reply{}, errCutReply
		}
	}
	return parseReply(ev, stdout)
}

// parseReply reads a hook's stdout as Claude Code does: a JSON object is a
// reply ("decision", "reason", "additionalContext", and the PreToolUse form
// under "hookSpecificOutput"); other text is context for RunStart and
// ignored elsewhere. Unknown reply fields are ignored; a known one of the
// wrong type, or stdout that starts like an object but is not one, is an
// error (the hook failed). "approve" and permissionDecision mean something
// only for PreToolUse.
func parseReply(ev Event, stdout []byte) (reply, error) {
	t := bytes.TrimSpace(stdout)
	if len(t) == 0 {
		return reply{}, nil
	}
	if t[0] != '{' {
		if ev == RunStart {
			return reply{context: string(t)}, nil
		}
		return reply{}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(t, &obj); err != nil {
		return reply{}, fmt.Errorf("stdout starts with \"{\" but is not a JSON object: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	var rp reply
	decision, err := replyString(obj, "", "decision")
	if err != nil {
		return reply{}, err
	}
	switch decision {
	case "", DecisionBlock, DecisionApprove:
	default:
		return reply{}, fmt.Errorf("decision: want \"block\" or \"approve\", got %s", shown(obj["decision"]))
	}
	if rp.reason, err = replyString(obj, "", "reason"); err != nil {
		return reply{}, err
	}
	var contexts []string
	c, err := replyString(obj, "", "additionalContext")
	if err != nil {
		return reply{}, err
	}
	contexts = append(contexts, c)

	var permission, permissionReason string
	if raw, ok := obj["hookSpecificOutput"]; ok && text.JSONKind(raw) != "null" {
		if text.JSONKind(raw) != "object" {
			return reply{}, fmt.Errorf("hookSpecificOutput: want an object, got %s", shown(raw))
		}
		var hso map[string]json.RawMessage
		if err := json.Unmarshal(raw, &hso); err != nil {
			return reply{}, fmt.Errorf("hookSpecificOutput: %v", err)
		}
		const at = "hookSpecificOutput"
		if c, err = replyString(hso, at, "additionalContext"); err != nil {
			return reply{}, err
		}
		contexts = append(contexts, c)
		if permission, err = replyString(hso, at, "permissionDecision"); err != nil {
			return reply{}, err
		}
		switch permission {
		case "", "allow", "deny", "ask":
		default:
			return reply{}, fmt.Errorf("hookSpecificOutput.permissionDecision: want \"allow\", \"deny\" or \"ask\", got %s", shown(hso["permissionDecision"]))
		}
		if permissionReason, err = replyString(hso, at, "permissionDecisionReason"); err != nil {
			return reply{}, err
		}
	}
	rp.context = joinNonEmpty(contexts)

	switch {
	case decision == DecisionBlock:
		rp.decision = DecisionBlock
	case ev == PreToolUse && permission == "deny":
		rp.decision = DecisionBlock
		if permissionReason != "" {
			rp.reason = permissionReason
		}
	case ev == PreToolUse && (decision == DecisionApprove || permission == "allow"):
		rp.decision = DecisionApprove
		if rp.reason == "" {
			rp.reason = permissionReason
		}
	}
	return rp, nil
}

// replyString is obj[key] as a string: absent or null is "".
func replyString(obj map[string]json.RawMessage, at, key string) (string, error) {
	raw, ok := obj[key]
	if !ok || text.JSONKind(raw) == "null" {
		return "", nil
	}
	var s string
	if text.JSONKind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s: want a string, got %s", join(at, key), shown(raw))
	}
	return s, nil
}

func joinNonEmpty(parts []string) string {
	var keep []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}
