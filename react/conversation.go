package react

import (
	"fmt"
	"strings"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/tools"

	"github.com/tactcli/tact/internal/text"
)

// A conversation's earlier turns (tact chat): a run given them puts them
// between its system prompt and its query, as pinned messages, so a
// follow-up ("now open the second one") sees what the earlier turns did,
// and a backend's KV cache keeps the prefix they share with the previous
// turn's prompts (the system prompt with the tools, then every earlier
// turn). When they would take more than half of what the window leaves
// after the system prompt, the query and the reply, the oldest are folded
// into one extractive summary; the run reports the entries it used
// (Result.Conversation), so the next turn starts from the folded ones and
// its prefix stays the same.

// ConversationEntry is one earlier turn as the model sees it, or a summary
// of several. Entries are made by TurnEntry and by a run's folding; their
// text is redacted.
type ConversationEntry struct {
	First, Last int    // turns covered (First == Last for one turn)
	Summary     bool   // a summary of turns First..Last
	Text        string // the message the model sees
	// brief is the entry's lines in a summary: one per turn.
	brief []string
}

// Limits of an earlier turn's rendering: a follow-up needs the names and
// values an action found, not its whole output (the answer usually has
// what matters).
const (
	turnObsLines  = 8
	turnObsBytes  = 600
	turnArgsBytes = 200
	turnTextBytes = 1500 // query and answer each
	briefBytes    = 160
)

// TurnEntry renders a finished run as the conversation entry of turn n:
// its query, each action with a short observation, and the answer, or how
// the turn ended when it did not succeed (a cancelled turn says it was
// interrupted). redact hides secrets in the query (the result's texts are
// redacted already); nil: none.
func TurnEntry(n int, query string, res *Result, redact func(string) string) ConversationEntry {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	t := prompt.EarlierTurn{N: n, Query: clip(strings.TrimSpace(redact(query)), turnTextBytes)}
	var used []string
	if res != nil {
		for _, st := range res.Trace.Steps {
			if st.Action.Tool == tools.FinalAnswer || st.Action.Tool == "" {
				continue
			}
			used = append(used, st.Action.Tool)
			t.Actions = append(t.Actions, earlierAction(st))
		}
		switch res.TerminationReason {
		case ReasonSuccess:
			t.Answer = clip(strings.TrimSpace(res.FinalAnswer), turnTextBytes)
		case ReasonCancelled:
			t.Note = "interrupted by the user before it finished; no answer"
		default:
			t.Note = fmt.Sprintf("ended without a proper answer: %s", res.TerminationReason)
			if res.Message != "" {
				t.Note += ": " + clip(firstLine(res.Message), briefBytes)
			}
			if a := strings.TrimSpace(res.FinalAnswer); a != "" {
				t.Answer = clip(a, turnTextBytes)
			}
		}
	}
	brief := fmt.Sprintf("- turn %d: %q", n, clip(text.OneLine(t.Query), briefBytes))
	if len(used) > 0 {
		brief += " (" + strings.Join(used, ", ") + ")"
	}
	switch {
	case t.Answer != "":
		brief += " -> " + clip(text.OneLine(t.Answer), briefBytes)
	case t.Note != "":
		brief += " -> " + t.Note
	}
	return ConversationEntry{First: n, Last: n, Text: prompt.Render("earlier_turn", t), brief: []string{brief}}
}

// earlierAction is one step of an earlier turn: call, outcome, first lines.
func earlierAction(st StepTrace) prompt.EarlierAction {
	a := prompt.EarlierAction{Call: st.Action.Tool + " " + clip(canonical(st.Action.Args), turnArgsBytes)}
	obs := strings.TrimSpace(st.Observation)
	switch {
	case st.SkipReason != "":
		a.Outcome = "skipped (" + st.SkipReason + ")"
	case st.Error != "" || st.ExitCode != 0:
		a.Outcome = fmt.Sprintf("failed (exit code %d): %s", st.ExitCode, clip(firstLine(cmpOr(st.Error, obs)), briefBytes))
		return a
	default:
		a.Outcome = "ok"
	}
	a.Output = headLines(obs, turnObsLines, turnObsBytes)
	return a
}

// headLines keeps the first lines of s (at most n lines and about max
// bytes, whole runes), saying how much was left out.
func headLines(s string, n, max int) string {
	lines := strings.Split(s, "\n")
	out := strings.Join(lines[:min(n, len(lines))], "\n") // a prefix of s
	if len(out) > max {
		var whole *redact.Redactor // nil: cuts keep runes whole
		out = out[:whole.CutBefore(out, max)]
	}
	if rest := strings.TrimPrefix(s[len(out):], "\n"); rest != "" {
		more := strings.Count(rest, "\n") + 1
		out += fmt.Sprintf("\n[... %d more lines, %d bytes, left out]", more, len(rest))
	}
	return out
}

// conversationFold describes a folding for its compaction event.
type conversationFold struct {
	before, after int // tokens of the entries
	folded        int // entries folded into the summary
	first, last   int // turns the summary covers
}

// fitConversation folds the oldest entries into one summary until all take
// at most room tokens (room <= 0: no limit). Whole entries are kept where
// they fit, the newest first; a summary too long on its own loses its
// oldest lines.
func fitConversation(entries []ConversationEntry, room int, count llm.Counter) ([]ConversationEntry, *conversationFold) {
	if room <= 0 || len(entries) == 0 {
		return entries, nil
	}
	// rest[k] is what entries[k:] take.
	rest := make([]int, len(entries)+1)
	for k := len(entries) - 1; k >= 0; k-- {
		rest[k] = rest[k+1] + entryTokens(entries[k], count)
	}
	if rest[0] <= room {
		return entries, nil
	}
	for k := 1; k <= len(entries); k++ {
		if k == 1 && entries[0].Summary {
			continue // folding a summary alone gains nothing
		}
		var s ConversationEntry
		if k < len(entries) {
			if s = foldEntries(entries[:k], 0, count); entryTokens(s, count)+rest[k] > room {
				continue
			}
		} else {
			s = foldEntries(entries, room, count)
		}
		out := append([]ConversationEntry{s}, entries[k:]...)
		return out, &conversationFold{before: rest[0], after: entryTokens(s, count) + rest[k], folded: k, first: s.First, last: s.Last}
	}
	return entries, nil // not reached: k == len(entries) returns
}

// foldEntries makes the summary of es: the earlier summary's lines, then a
// line per turn; with room > 0 the oldest lines go until it fits.
func foldEntries(es []ConversationEntry, room int, count llm.Counter) ConversationEntry {
	var lines []string
	for _, e := range es {
		lines = append(lines, e.brief...)
	}
	s := ConversationEntry{First: es[0].First, Last: es[len(es)-1].Last, Summary: true}
	dropped := 0
	for {
		text := strings.Join(lines, "\n")
		if dropped > 0 {
			text = fmt.Sprintf("(%d older lines left out)\n%s", dropped, text)
		}
		s.Text = prompt.Render("earlier_summary", prompt.EarlierSummary{First: s.First, Last: s.Last, Summary: text})
		if room <= 0 || len(lines) <= 1 || entryTokens(s, count) <= room {
			break
		}
		lines = lines[1:]
		dropped++
	}
	s.brief = lines
	return s
}

// entryTokens is what an entry adds to a prompt: its text and a message's
// template tokens.
func entryTokens(e ConversationEntry, count llm.Counter) int {
	return count.Prompt([]llm.Message{{Role: llm.RoleUser, Content: e.Text}}) - count.Prompt(nil)
}

// conversationMessages are the entries as pinned user messages.
func conversationMessages(es []ConversationEntry) []llm.Message {
	out := make([]llm.Message, len(es))
	for i, e := range es {
		out[i] = llm.Message{Role: llm.RoleUser, Content: e.Text}
	}
	return out
}
