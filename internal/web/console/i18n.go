package console

import (
	"net/http"
	"strings"

	"github.com/xjobdev/xjob/internal/web/auth"
)

// langCookie keeps the language of a visitor who is not signed in (the
// sign-in page); a signed-in user's choice is stored on the user.
const langCookie = "xjob_lang"

// languages are the console's languages in the order the switcher shows
// them, with the name each is shown by.
var languages = [][2]string{{"en", "EN"}, {"zh-CN", "简体"}, {"zh-TC", "繁體"}}

// lang picks the page language: the user's setting, else the cookie,
// else the browser's Accept-Language, else English.
func (h *Handler) lang(r *http.Request, p auth.Principal) string {
	if _, ok := messages[p.User.Locale]; ok && p.User.Locale != "" {
		return p.User.Locale
	}
	if c, err := r.Cookie(langCookie); err == nil {
		if _, ok := messages[c.Value]; ok {
			return c.Value
		}
	}
	al := strings.ToLower(r.Header.Get("Accept-Language"))
	switch {
	case strings.HasPrefix(al, "zh-tw"), strings.HasPrefix(al, "zh-hk"), strings.HasPrefix(al, "zh-hant"):
		return "zh-TC"
	case strings.HasPrefix(al, "zh"):
		return "zh-CN"
	}
	return "en"
}

// setLang stores the chosen language (cookie, and the user's setting when
// signed in) and goes back.
func (h *Handler) setLang(w http.ResponseWriter, r *http.Request) {
	lang := r.PostFormValue("lang")
	if _, ok := messages[lang]; !ok {
		http.Error(w, "unknown language", http.StatusBadRequest)
		return
	}
	if p, err := h.cfg.Auth.Authenticate(r); err == nil {
		if err := h.cfg.Auth.SetLocale(r.Context(), p, lang); err != nil {
			h.serverError(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: langCookie, Value: lang, Path: "/", MaxAge: 365 * 86400,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: auth.Secure(r)})
	back(w, r, safeNext(r.PostFormValue("next")), "")
}
