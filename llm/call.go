package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
)

// CallInfo is what a run tells the backend of its calls through their
// context: the run's query, and who wants each reply (the engine records
// it as a model_reply event, so a run can be replayed: tact test). It
// changes nothing a backend does.
type CallInfo struct {
	Query string
	// OnReply, when set, is called with each successful call's request
	// (its messages redacted) and reply.
	OnReply func(req Request, resp Response)
}

type callKey struct{}

// WithCallInfo is ctx carrying c for the calls made with it.
func WithCallInfo(ctx context.Context, c *CallInfo) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallInfoOf is the CallInfo ctx carries, or nil.
func CallInfoOf(ctx context.Context) *CallInfo {
	c, _ := ctx.Value(callKey{}).(*CallInfo)
	return c
}

// PromptDigest is a short digest of the stable part of a prompt: its
// system message (the instructions and the tool list) and the run's query.
// A recorded reply is replayed only for a prompt with the same digest
// (tact test run): a changed system prompt or tool list shows as a
// mismatch, while observations, which vary with the workspace, do not.
func PromptDigest(msgs []Message, query string) string {
	h := sha256.New()
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		h.Write([]byte(msgs[0].Content))
	}
	h.Write([]byte{0})
	h.Write([]byte(query))
	return hex.EncodeToString(h.Sum(nil)[:8])
}
