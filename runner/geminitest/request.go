// What the stand-in received: a Request, with the contents and parts of a
// generateContent body decoded, and the function responses it carries.

package geminitest

import (
	"encoding/json"
	"net/http"
	"time"
)

// Request is one request the stand-in received.
type Request struct {
	Method string
	Path   string // URL path, without the query, e.g. /v1beta/models/gemini-2.5-pro:streamGenerateContent
	Query  string // raw query, e.g. "alt=sse"
	Header http.Header
	Body   []byte // as received
	// At is when the request arrived: its headers read, before its body
	// (for a client's latency to the model, as benchmarks measure it).
	At time.Time
	// Main is true for the main conversation's requests, the ones the
	// script answers; Turn is then the index of the turn that answered.
	Main bool
	Turn int

	// From the path of a models/{model}:{method} request; zero otherwise.
	Model  string
	Stream bool // :streamGenerateContent

	// Decoded from a generateContent body; zero for other requests.
	Tools            []string // names of the function declarations offered
	Contents         []Content
	ResponseMIMEType string // generationConfig.responseMimeType
	// ResponseSchema is generationConfig.responseJsonSchema, else
	// responseSchema: the shape of a JSON answer asked for.
	ResponseSchema json.RawMessage
}

// Content is one message of the conversation: role "user" or "model".
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one part of a content: text, a functionCall, a functionResponse, ...
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is the model calling a tool.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is the CLI's answer to a FunctionCall.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response,omitempty"`
}

// generateBody is the part of a generateContent request the stand-in reads.
type generateBody struct {
	Contents []Content `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMIMEType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

// decode fills the generateContent fields of r from its body.
func (r *Request) decode() error {
	var b generateBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return err
	}
	r.Contents = b.Contents
	if r.Contents == nil {
		r.Contents = []Content{}
	}
	r.ResponseMIMEType = b.GenerationConfig.ResponseMIMEType
	r.ResponseSchema = b.GenerationConfig.ResponseJSONSchema
	if len(r.ResponseSchema) == 0 {
		r.ResponseSchema = b.GenerationConfig.ResponseSchema
	}
	for _, tl := range b.Tools {
		for _, fd := range tl.FunctionDeclarations {
			r.Tools = append(r.Tools, fd.Name)
		}
	}
	return nil
}

// FunctionResponses lists the functionResponse parts of the request's last
// content: the answers to the model's previous turn.
func (r Request) FunctionResponses() []FunctionResponse {
	if len(r.Contents) == 0 {
		return nil
	}
	var out []FunctionResponse
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}
