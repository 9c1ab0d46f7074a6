package agent

import (
	"sync"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runrecord"
)

// Conversation is a session's memory (tact chat): a job run with it sees
// the earlier turns — their queries, the actions taken with short
// observations, and the answers — and becomes its next turn, cancelled
// turns included (recorded as interrupted). The executor keeps the earlier
// turns first after its system prompt and folds the oldest into a summary
// when they would crowd the window (react.ConversationEntry). Safe for
// concurrent use, but turns are meant to run one at a time: a turn run
// while another is still running does not see it.
type Conversation struct {
	mu      sync.Mutex
	id      string
	turns   int // turns recorded
	entries []react.ConversationEntry
	last    string // run id of the latest turn ("": none)
}

// NewConversation starts an empty conversation with a fresh id.
func NewConversation() *Conversation {
	return &Conversation{id: react.NewRunID()}
}

// ID names the conversation in run_start events (a new one after Clear).
func (c *Conversation) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// Turns is how many turns the conversation holds.
func (c *Conversation) Turns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turns
}

// Clear starts a new conversation: no earlier turns, a new id.
func (c *Conversation) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id, c.turns, c.entries, c.last = react.NewRunID(), 0, nil, ""
}

// Texts are the earlier turns as the next turn's model will see them
// (before any folding that turn needs), oldest first.
func (c *Conversation) Texts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.entries))
	for i, e := range c.entries {
		out[i] = e.Text
	}
	return out
}

// Tokens is what the earlier turns take of a prompt, counted with b's
// tokenizer (or estimated).
func (c *Conversation) Tokens(b llm.Backend) int {
	texts := c.Texts()
	if len(texts) == 0 {
		return 0
	}
	count := llm.CounterFor(b)
	msgs := make([]llm.Message, len(texts))
	for i, t := range texts {
		msgs[i] = llm.Message{Role: llm.RoleUser, Content: t}
	}
	return count.Prompt(msgs) - count.Prompt(nil)
}

// next is what the next turn starts from: its number, the conversation's
// id and the earlier entries.
func (c *Conversation) next() (turn int, id string, entries []react.ConversationEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turns + 1, c.id, append([]react.ConversationEntry(nil), c.entries...)
}

// record adds a finished run as turn n of conversation id: the entries the
// run used (perhaps folded) then the run's own. A conversation cleared
// while the turn ran keeps none of it.
func (c *Conversation) record(n int, id, query string, res *react.Result, redact func(string) string) {
	e := react.TurnEntry(n, query, res, redact)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != id {
		return
	}
	c.entries = append(append([]react.ConversationEntry(nil), res.Conversation...), e)
	c.turns = n
	if res != nil {
		c.last = res.RunID
	}
}

// lastRun is the run id of the latest turn, the parent of the next one in
// the run history.
func (c *Conversation) lastRun() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Turn is an earlier turn of a conversation as the run history keeps it:
// its run id, query and result (the --json document).
type Turn = runrecord.Turn

// ResumeConversation is a conversation whose earlier turns are turns,
// oldest first (tact chat --resume, tact run --continue): the next turn
// sees them as a chat turn would.
func ResumeConversation(turns []Turn) *Conversation {
	c := NewConversation()
	for i, t := range turns {
		c.entries = append(c.entries, react.TurnEntry(i+1, t.Query, t.Result, nil))
		c.last = t.RunID
	}
	c.turns = len(turns)
	return c
}

// texts of entries, for the planner.
func entryTexts(es []react.ConversationEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Text
	}
	return out
}
