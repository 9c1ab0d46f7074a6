package models

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// FetchOptions configures Fetch.
type FetchOptions struct {
	URL string
	// Partial is the file the download goes to. A partial file left by an
	// interrupted Fetch is resumed when its record (Partial+MetaExt) shows
	// the server still has the same file, as PullModel does.
	Partial string
	// Name is shown beside the progress bar and in notes.
	Name string
	// Progress receives a progress bar and notes (meant for a terminal);
	// nil: none.
	Progress   io.Writer
	HTTPClient *http.Client // nil: a client without timeout (ctx and StallTimeout bound it)
	// StallTimeout aborts the transfer when no byte arrives for this long
	// (connecting and waiting for the answer included); 0:
	// DefaultStallTimeout.
	StallTimeout time.Duration
}

// Fetch downloads o.URL into o.Partial with PullModel's transfer (resume,
// stall timeout, progress bar, redirects, redacted messages) and returns
// the file's hex SHA-256. It checks nothing else and installs nothing: the
// caller verifies the file, moves it where it belongs and removes
// o.Partial+MetaExt, and holds whatever lock keeps two fetches of the same
// file apart. Error messages start with "download URL:", the URL shown
// through SafeURL; an interrupted or stalled transfer keeps the partial
// file for the next Fetch and says so.
func Fetch(ctx context.Context, o FetchOptions) (string, error) {
	shown := SafeURL(o.URL)
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &pullError{msg: fmt.Sprintf("download %q: not an http(s) URL", shown), kind: ErrInvalid}
	}
	if o.Partial == "" {
		return "", &pullError{msg: fmt.Sprintf("download %s: no file to download to", shown), kind: ErrInvalid}
	}
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	stall := o.StallTimeout
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	t := &transfer{ctx: ctx, op: "download", rawURL: o.URL, shown: shown, partial: o.Partial,
		meta: o.Partial + MetaExt, name: o.Name, progress: o.Progress, stall: stall}
	t.client = t.watchRedirects(client)
	sum, err := t.run()
	if err != nil {
		return "", &redactedError{msg: RedactURL(err.Error(), o.URL), err: err}
	}
	return sum, nil
}
