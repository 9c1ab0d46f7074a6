package llm

// The backends' names: what --backend (TACT_BACKEND) takes and
// ModelInfo.Backend says. Spelled here only.
const (
	BackendLlama  = "llama"  // a model file, in-process (llm/llamacpp)
	BackendOpenAI = "openai" // an OpenAI-compatible server (llm/openai)
	BackendScript = "script" // canned replies (Script)
	BackendNone   = "none"   // no model (None)
)
