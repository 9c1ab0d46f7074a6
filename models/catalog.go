package models

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// catalogJSON is the list of known-good small instruct models, embedded so
// `tact models pull NAME` works offline of any index.
//
//go:embed catalog.json
var catalogJSON []byte

// CatalogEntry is one known-good model: where it lives on the Hugging Face
// hub and what it costs.
type CatalogEntry struct {
	Name string `json:"name"` // catalog name; also the installed model's name
	Repo string `json:"repo"` // OWNER/NAME on the hub
	File string `json:"file"` // file in the repository
	// Revision pins a commit where the catalog pins a checksum (so a
	// re-upload upstream cannot break the pin); "" means main.
	Revision        string `json:"revision,omitempty"`
	Size            int64  `json:"size"`                       // bytes
	SizeApproximate bool   `json:"size_approximate,omitempty"` // Size is rounded from the hub's page
	SHA256          string `json:"sha256,omitempty"`           // pinned digest, only where one was published
	License         string `json:"license"`
	ContextLength   int    `json:"context_length"`
	Note            string `json:"note"` // tool-use quality, from the model card
	Default         bool   `json:"default,omitempty"`
}

var catalog = mustParseCatalog(catalogJSON)

func mustParseCatalog(b []byte) []CatalogEntry {
	var entries []CatalogEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		panic("models: catalog.json: " + err.Error())
	}
	return entries
}

// Catalog returns the known-good models, in catalog order.
func Catalog() []CatalogEntry {
	return append([]CatalogEntry(nil), catalog...)
}

// LookupCatalog finds a catalog entry by name (case-insensitive).
func LookupCatalog(name string) (CatalogEntry, bool) {
	for _, e := range catalog {
		if strings.EqualFold(e.Name, name) {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// DefaultCatalogEntry is the model recommended for CPUs.
func DefaultCatalogEntry() CatalogEntry {
	for _, e := range catalog {
		if e.Default {
			return e
		}
	}
	return catalog[0]
}

// CatalogNames lists the catalog's names, for messages.
func CatalogNames() []string {
	names := make([]string, len(catalog))
	for i, e := range catalog {
		names[i] = e.Name
	}
	return names
}

// URL is where the entry's file is downloaded from on the hub at endpoint
// (see HubEndpoint).
func (e CatalogEntry) URL(endpoint string) string {
	return resolveURL(endpoint, e.Repo, e.revision(), e.File)
}

func (e CatalogEntry) revision() string {
	if e.Revision == "" {
		return "main"
	}
	return e.Revision
}

// SizeText is the size for people: "1.1GB", or "~2.1GB" when approximate.
func (e CatalogEntry) SizeText() string {
	s := byteSize(e.Size)
	if e.SizeApproximate {
		return "~" + s
	}
	return s
}

// DefaultHubEndpoint is the Hugging Face hub, used when HF_ENDPOINT is unset.
const DefaultHubEndpoint = "https://huggingface.co"

// HubEndpoint checks HF_ENDPOINT's value and returns it without trailing
// slashes ("" gives DefaultHubEndpoint). The error names the variable.
func HubEndpoint(raw string) (string, error) {
	v := strings.TrimSpace(raw)
	if v == "" {
		return DefaultHubEndpoint, nil
	}
	v = strings.TrimRight(v, "/")
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", &pullError{msg: fmt.Sprintf("HF_ENDPOINT=%s: want an http(s) URL such as %s", SafeURL(raw), DefaultHubEndpoint), kind: ErrInvalid}
	}
	return v, nil
}

// resolveURL is the hub's download URL of FILE in REPO at REVISION, with
// every path segment escaped.
func resolveURL(endpoint, repo, revision, file string) string {
	return endpoint + "/" + escapeSegments(repo) + "/resolve/" + url.PathEscape(revision) + "/" + escapeSegments(file)
}

func escapeSegments(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
