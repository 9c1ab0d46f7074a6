package react

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tactcli/tact/internal/jqx"
)

// defaultCannotPrefixes detect a model saying it cannot do the task (the
// system prompt asks it to start such answers with "I cannot"); they match
// whole words only, so "I cannotice" is no failure.
var defaultCannotPrefixes = []string{"i cannot", "i can't", "i can’t", "i can not", "i am unable", "i'm unable", "i’m unable", "unable to complete"}

func (r *run) checkPhrasesAndStop(rec stepRecord, obs string) bool {
	for _, ph := range r.e.SuccessPhrases {
		if containsPhrase(obs, ph) {
			r.end(ReasonSuccess, obs, fmt.Sprintf("success phrase %q observed", ph))
			return true
		}
	}
	for _, ph := range r.e.FailurePhrases {
		if containsPhrase(obs, ph) {
			r.end(ReasonFailure, obs, fmt.Sprintf("failure phrase %q observed", ph))
			return true
		}
	}
	if r.stopQuery {
		if match, err := r.stopWhen(rec); err != nil {
			r.e.Log.Warn("--stop-when failed", "err", err)
		} else if match {
			r.end(ReasonCustom, rec.Output, "--stop-when matched step "+fmt.Sprint(rec.Step))
			return true
		}
	}
	return false
}

func (r *run) failurePhrase(answer string) string {
	for _, ph := range r.e.FailurePhrases {
		if containsPhrase(answer, ph) {
			return ph
		}
	}
	lower := strings.ToLower(strings.TrimSpace(answer))
	for _, ph := range defaultCannotPrefixes {
		if strings.HasPrefix(lower, ph) && wordEdge(lower, len(ph), ph) {
			return ph
		}
	}
	return ""
}

// containsPhrase reports whether text contains phrase, ignoring case, as
// whole words: where the phrase begins or ends with a letter or digit, the
// text must not continue it ("error" is not found in "errorless", nor
// "cannot" in "cannotice").
func containsPhrase(text, phrase string) bool {
	if phrase == "" {
		return false
	}
	lt, lp := strings.ToLower(text), strings.ToLower(phrase)
	for from := 0; from <= len(lt)-len(lp); {
		i := strings.Index(lt[from:], lp)
		if i < 0 {
			return false
		}
		i += from
		if wordStart(lt, i, lp) && wordEdge(lt, i+len(lp), lp) {
			return true
		}
		_, size := utf8.DecodeRuneInString(lt[i:])
		from = i + size
	}
	return false
}

// wordStart: the phrase at text[i:] does not continue a word before it.
func wordStart(text string, i int, phrase string) bool {
	first, _ := utf8.DecodeRuneInString(phrase)
	if !isWordRune(first) || i == 0 {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(text[:i])
	return !isWordRune(prev)
}

// wordEdge: the phrase ending at text[:end] is not continued by a word.
func wordEdge(text string, end int, phrase string) bool {
	last, _ := utf8.DecodeLastRuneInString(phrase)
	if !isWordRune(last) || end >= len(text) {
		return true
	}
	next, _ := utf8.DecodeRuneInString(text[end:])
	return !isWordRune(next)
}

func isWordRune(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) }

func (r *run) jqState() map[string]any {
	return map[string]any{"query": r.query, "steps": r.records}
}

// stopWhen evaluates --stop-when over a finished step (run state in
// $state), with the same bounds as $jq arguments: true unless the first
// result is false or null (none: false).
func (r *run) stopWhen(rec any) (bool, error) {
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	state, err := json.Marshal(r.jqState())
	if err != nil {
		return false, err
	}
	out, err := jqx.Eval(r.ctx, jqx.Request{Expr: r.e.StopWhen, Vars: []string{"$state"},
		VarValues: []json.RawMessage{state}, Input: recJSON, MaxResults: 1})
	if err != nil || len(out.Results) == 0 {
		return false, err
	}
	v := string(out.Results[0])
	return v != "null" && v != "false", nil
}

// CompileJQ checks that an expression over the run state ($state is bound
// too) compiles, within jqx's bounds.
func CompileJQ(expr string) error {
	return jqx.Check(expr, "$state")
}
