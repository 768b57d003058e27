// Reading a method call as Telegram does: its parameters (query, form,
// multipart form with files, or JSON), what each method takes and
// refuses, and inline keyboards.

package telegramtest

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// fill completes call from its method's parameters as Telegram reads them;
// for a request Telegram would refuse it returns the status and
// description Telegram answers with (code 0: none).
func (a *API) fill(call *Call, form url.Values, files map[string][]byte, names map[string]string) (code int, desc string) {
	switch call.Method {
	case "sendMessage", "sendPhoto", "sendDocument", "editMessageText", "editMessageReplyMarkup":
		var err error
		if call.Keyboard, err = keyboard(form.Get("reply_markup")); err != nil {
			return http.StatusBadRequest, "Bad Request: " + err.Error()
		}
	}
	var err error
	switch call.Method {
	case "sendMessage", "editMessageText":
		call.Text = form.Get("text")
		if call.Text == "" {
			return http.StatusBadRequest, "Bad Request: message text is empty"
		}
		if len([]rune(call.Text)) > 4096 {
			return http.StatusBadRequest, "Bad Request: message is too long"
		}
		if call.NoLinkPreview, err = noLinkPreview(form); err != nil {
			return http.StatusBadRequest, "Bad Request: " + err.Error()
		}
	case "editMessageReplyMarkup":
	case "sendPhoto":
		call.Text = form.Get("caption")
		var p string
		p, err = a.photo(form.Get("photo"), files["photo"])
		call.Photos = []string{p}
	case "sendDocument":
		call.Text = form.Get("caption")
		if len([]rune(call.Text)) > captionLimit {
			return http.StatusBadRequest, "Bad Request: message caption is too long"
		}
		err = a.document(call, form.Get("document"), files["document"], names["document"])
	case "sendMediaGroup":
		err = a.mediaGroup(call, form.Get("media"), files)
	default:
		return http.StatusNotFound, "Not Found: method not found"
	}
	if err != nil {
		return http.StatusBadRequest, "Bad Request: " + err.Error()
	}
	return 0, ""
}

// noLinkPreview reads whether a text's link preview is off: its
// link_preview_options' is_disabled, or disable_web_page_preview (the
// parameter link_preview_options replaced, which the Bot API still takes).
func noLinkPreview(form url.Values) (bool, error) {
	if form.Get("disable_web_page_preview") == "true" {
		return true, nil
	}
	opts := form.Get("link_preview_options")
	if opts == "" {
		return false, nil
	}
	var o struct {
		IsDisabled bool `json:"is_disabled"`
	}
	if err := json.Unmarshal([]byte(opts), &o); err != nil {
		return false, errors.New("can't parse link preview options JSON object")
	}
	return o.IsDisabled, nil
}

// keyboard reads a reply_markup as Telegram does. The fake takes inline
// keyboards of callback buttons and URL buttons.
func keyboard(markup string) ([][]Button, error) {
	if markup == "" {
		return nil, nil
	}
	var m struct {
		InlineKeyboard [][]Button `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(markup), &m); err != nil || m.InlineKeyboard == nil {
		return nil, errors.New("can't parse reply keyboard markup JSON object")
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			switch {
			case b.Text == "":
				return nil, errors.New("can't parse inline keyboard button: Text must be non-empty")
			case b.Data != "" && b.URL != "":
				return nil, errors.New("can't parse inline keyboard button: only one of the optional fields must be specified")
			case b.URL != "" && !strings.HasPrefix(b.URL, "https://") && !strings.HasPrefix(b.URL, "http://"):
				return nil, errors.New("BUTTON_URL_INVALID")
			case b.URL != "":
			case b.Data == "":
				return nil, errors.New("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard")
			case len(b.Data) > 64:
				return nil, errors.New("BUTTON_DATA_INVALID")
			}
		}
	}
	return m.InlineKeyboard, nil
}

// parse reads a method call's parameters: a query string, a form, a
// multipart form (its files, and their file names, by field name) or a
// JSON object.
func parse(r *http.Request) (url.Values, map[string][]byte, map[string]string, error) {
	files, names := map[string][]byte{}, map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		r.Body = http.MaxBytesReader(nil, r.Body, uploadLimit+1<<20)
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, nil, nil, err
		}
		for name, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return nil, nil, nil, err
			}
			data, _ := io.ReadAll(f)
			f.Close()
			files[name], names[name] = data, fhs[0].Filename
		}
		return r.Form, files, names, nil
	case "application/json":
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, nil, nil, err
		}
		v := url.Values{}
		for k, x := range m {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			default:
				b, _ := json.Marshal(x)
				v.Set(k, string(b))
			}
		}
		return v, files, names, nil
	default:
		return r.Form, files, names, r.ParseForm()
	}
}
