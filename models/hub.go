package models

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

// Source is a resolved pull argument: what to fetch and how to install it.
type Source struct {
	URL    string
	Name   string        // installed model name; "" lets Pull take it from the URL
	SHA256 string        // the catalog's pinned digest, or ""
	Entry  *CatalogEntry // set for a catalog name
}

// HubOptions configures ResolveRef.
type HubOptions struct {
	Endpoint string       // from HubEndpoint; "" is DefaultHubEndpoint
	Client   *http.Client // nil: http.DefaultClient
	Timeout  time.Duration
}

// maxHubAnswer bounds the hub API's answer (a repository's file list).
const maxHubAnswer = 16 << 20

// ResolveRef turns a parsed pull argument into the URL to fetch. Only
// RefQuant asks the hub: GET ENDPOINT/api/models/REPO lists the repository's
// files (siblings[].rfilename), and exactly one GGUF file must carry the
// quantization in its name (case-insensitive, as a whole word: Q4_0 does not
// match Q4_0_4_4; mmproj files are skipped). Errors about the argument wrap
// ErrInvalid.
func ResolveRef(ctx context.Context, ref Ref, opts HubOptions) (Source, error) {
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = DefaultHubEndpoint
	}
	switch ref.Kind {
	case RefURL:
		return Source{URL: ref.URL}, nil
	case RefCatalog:
		e := *ref.Entry
		return Source{URL: e.URL(endpoint), Name: e.Name, SHA256: e.SHA256, Entry: &e}, nil
	case RefFile:
		rev := ref.Revision
		if rev == "" {
			rev = "main"
		}
		return Source{URL: resolveURL(endpoint, ref.Repo, rev, ref.File), Name: modelName(path.Base(ref.File))}, nil
	case RefQuant:
		files, err := listRepoFiles(ctx, endpoint, ref.Repo, opts)
		if err != nil {
			return Source{}, err
		}
		file, err := pickQuant(ref, files)
		if err != nil {
			return Source{}, err
		}
		return Source{URL: resolveURL(endpoint, ref.Repo, "main", file), Name: modelName(path.Base(file))}, nil
	}
	return Source{}, fmt.Errorf("unknown reference kind %d", ref.Kind)
}

// listRepoFiles asks the hub for the file names in repo.
func listRepoFiles(ctx context.Context, endpoint, repo string, opts HubOptions) ([]string, error) {
	api := endpoint + "/api/models/" + escapeSegments(repo)
	shown := SafeURL(api)
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api, nil)
	if err != nil {
		return nil, &pullError{msg: fmt.Sprintf("list %s: %v", shown, err), kind: ErrInvalid}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, &redactedError{msg: RedactURL(fmt.Sprintf("list the files of %s: %v", repo, unwrapURLError(err)), api), err: err}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnauthorized:
		return nil, &pullError{msg: fmt.Sprintf("pull %s: no such repository on %s (%s)", repo, SafeURL(endpoint), resp.Status), kind: ErrInvalid}
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("list the files of %s: %s answered %s", repo, shown, resp.Status)
	}
	var info struct {
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHubAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", repo, unwrapURLError(err))
	}
	if len(body) > maxHubAnswer {
		return nil, fmt.Errorf("list the files of %s: %s answered more than %d bytes", repo, shown, maxHubAnswer)
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("list the files of %s: %s did not answer a file list: %w", repo, shown, err)
	}
	files := make([]string, 0, len(info.Siblings))
	for _, s := range info.Siblings {
		files = append(files, s.RFilename)
	}
	return files, nil
}

// pickQuant chooses the one GGUF file of ref.Quant among files.
func pickQuant(ref Ref, files []string) (string, error) {
	var matches, ggufs []string
	for _, f := range files {
		base := path.Base(f)
		if !strings.EqualFold(path.Ext(base), Ext) || strings.Contains(strings.ToLower(base), "mmproj") {
			continue
		}
		ggufs = append(ggufs, f)
		if hasQuant(base, ref.Quant) {
			matches = append(matches, f)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		if len(ggufs) == 0 {
			return "", &pullError{msg: fmt.Sprintf("pull %s:%s: the repository has no GGUF file", ref.Repo, ref.Quant), kind: ErrInvalid}
		}
		return "", &pullError{msg: fmt.Sprintf("pull %s:%s: no GGUF file of quantization %s (files: %s)",
			ref.Repo, ref.Quant, ref.Quant, strings.Join(limitList(ggufs, 12), ", ")), kind: ErrInvalid}
	}
	return "", &pullError{msg: fmt.Sprintf("pull %s:%s: %d files match (%s); name one with hf.co/%s/FILE",
		ref.Repo, ref.Quant, len(matches), strings.Join(limitList(matches, 12), ", "), ref.Repo), kind: ErrInvalid}
}

// hasQuant reports whether quant appears in name as a whole word: after the
// start, '-', '.' or '_', and before '.', '-' or the end.
func hasQuant(name, quant string) bool {
	lname, lq := strings.ToLower(name), strings.ToLower(quant)
	for i := 0; ; {
		j := strings.Index(lname[i:], lq)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(lq)
		before := start == 0 || strings.ContainsRune("-._", rune(lname[start-1]))
		after := end == len(lname) || strings.ContainsRune(".-", rune(lname[end]))
		if before && after {
			return true
		}
		i = start + 1
	}
}

func limitList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(slices.Clip(items[:n]), fmt.Sprintf("and %d more", len(items)-n))
}
