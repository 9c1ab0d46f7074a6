package llamacpp

import (
	"log/slog"

	"github.com/tactcli/tact/llm/chattemplate"
	"github.com/tactcli/tact/models"
)

// newFormatter picks the chat template formatter for the model (ChatML when
// its template is missing or unknown, with one warning).
func newFormatter(info *models.Info) chattemplate.Formatter {
	f, warning := chattemplate.NewFormatter(info)
	if warning != "" {
		slog.Warn(warning)
	}
	return f
}
