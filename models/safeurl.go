package models

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// redacted replaces a credential in a URL shown to people.
const redacted = "[REDACTED]"

// SafeURL returns rawURL fit to print, log or store: userinfo
// (user:password@, or a token used as user name) and the values of
// secret-looking query and fragment parameters (access_token, token,
// X-Amz-Signature, sig, api_key, ...) become [REDACTED]. It works on the
// text, so it also redacts URLs that do not parse; the result is for people,
// not for fetching.
func SafeURL(rawURL string) string {
	s, tail := rawURL, ""
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s, tail = s[:i], s[i:]
	}
	// The authority runs from after "scheme://" (or the start) to the next
	// '/' or '\'; its last '@' ends the userinfo.
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	end := len(s)
	if i := strings.IndexAny(s[start:], `/\`); i >= 0 {
		end = start + i
	}
	if _, err := url.Parse(rawURL); err != nil {
		// Unparsable (a password with an unescaped '/', say): do not guess
		// where the authority ends; everything up to the last '@' may be secret.
		end = len(s)
	}
	if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 && s[start:start+at] != redacted {
		s = s[:start] + redacted + s[start+at:]
	}
	var b strings.Builder
	b.WriteString(s)
	for tail != "" {
		sep := tail[0] // '?' or '#'
		part := tail[1:]
		tail = ""
		if sep == '?' {
			if i := strings.IndexByte(part, '#'); i >= 0 {
				part, tail = part[:i], part[i:]
			}
		}
		b.WriteByte(sep)
		b.WriteString(redactParams(part))
	}
	return b.String()
}

// redactParams redacts the values of secret-looking k=v pairs in a query or
// fragment, keeping everything else as written.
func redactParams(q string) string {
	var b strings.Builder
	for len(q) > 0 {
		i := strings.IndexAny(q, "&;")
		pair, sep := q, ""
		if i >= 0 {
			pair, sep, q = q[:i], q[i:i+1], q[i+1:]
		} else {
			q = ""
		}
		if key, _, ok := strings.Cut(pair, "="); ok && secretParam(key) {
			pair = key + "=" + redacted
		}
		b.WriteString(pair)
		b.WriteString(sep)
	}
	return b.String()
}

// secretWords are substrings of parameter names (lower case, without '-', '_'
// and '.') whose values are credentials: OAuth and API tokens, S3/GCS/Azure
// presigned-URL signatures and credentials, passwords, session ids.
var secretWords = []string{"token", "secret", "passw", "pwd", "apikey", "accesskey", "signature",
	"credential", "auth", "session", "sessid", "privatekey", "jwt", "bearer"}

// secretExact are whole parameter names that carry credentials.
var secretExact = map[string]bool{"sig": true, "key": true, "code": true, "pass": true, "hmac": true, "policy": true}

func secretParam(rawKey string) bool {
	key, err := url.QueryUnescape(rawKey)
	if err != nil {
		key = rawKey
	}
	key = strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
	if secretExact[key] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(key, w) {
			return true
		}
	}
	return false
}

// urlInText finds URLs in free text (error messages from net/http quote
// them, redirect targets included).
var urlInText = regexp.MustCompile(`(?i)[a-z][a-z0-9+.\-]*://[^\s"'<>` + "`" + `]+`)

// RedactURLs applies SafeURL to every URL in text. A URL is taken to end at
// whitespace or a quote, so text quoting a URL that contains a space is only
// partly covered: RedactURL also removes a known URL's credentials.
func RedactURLs(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlInText.ReplaceAllStringFunc(text, func(u string) string {
		// A punctuation mark after a URL ends the sentence, not the URL.
		// Only one: a credential made of such marks stays redacted.
		if n := len(u); n > 1 && strings.IndexByte(".,:;)", u[n-1]) >= 0 {
			return SafeURL(u[:n-1]) + u[n-1:]
		}
		return SafeURL(u)
	})
}

// RedactURL redacts, in text, every URL (as RedactURLs does) and every
// credential of rawURL wherever it appears, however the text quotes or
// escapes around it: the userinfo and the values of secret-looking
// parameters, as written and percent-decoded.
func RedactURL(text, rawURL string) string {
	// Known secrets first: redacting URLs could split one.
	for _, secret := range urlSecrets(rawURL) {
		text = strings.ReplaceAll(text, secret, redacted)
	}
	return RedactURLs(text)
}

// urlSecrets lists the credentials in rawURL, longest first (so a secret
// that contains another is replaced whole).
func urlSecrets(rawURL string) []string {
	var out []string
	add := func(v string) {
		// Very short values would redact unrelated text and hide little.
		if len(v) >= 3 && v != redacted {
			out = append(out, v)
			if dec, err := url.PathUnescape(v); err == nil && dec != v && len(dec) >= 3 {
				out = append(out, dec)
			}
			if dec, err := url.QueryUnescape(v); err == nil && dec != v && len(dec) >= 3 {
				out = append(out, dec)
			}
		}
	}
	s, tail := rawURL, ""
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s, tail = s[:i], s[i+1:]
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	// The userinfo ends at the authority's last '@' (as in SafeURL): an '@'
	// in the path (npm's scoped packages, /@scope/name) is no credential.
	end := len(s)
	if i := strings.IndexAny(s[start:], `/\`); i >= 0 {
		end = start + i
	}
	if _, err := url.Parse(rawURL); err != nil {
		end = len(s)
	}
	if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
		userinfo := s[start : start+at]
		add(userinfo)
		if user, pass, ok := strings.Cut(userinfo, ":"); ok {
			add(user)
			add(pass)
		}
	}
	for _, pair := range strings.FieldsFunc(tail, func(r rune) bool { return r == '&' || r == ';' || r == '#' }) {
		if key, val, ok := strings.Cut(pair, "="); ok && secretParam(key) {
			add(val)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
