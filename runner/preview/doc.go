// Package preview owns preview links: a person's app, listening on a port
// inside their home's network, opened in a browser through a link of an
// origin of its own (<id>.preview.localhost, or a wildcard host behind a
// tunnel), never the web chat's. A link's id is an unguessable bearer
// token; it expires after its TTL, when the person turns previews off, and
// with the home (Server.Open, Off, HomeGone). The proxy (Server.ServeHTTP)
// strips textslash's cookies and headers, gives the app the Host a dev
// server accepts (localhost:<port>), and passes HTTP/1.1, streaming
// responses, server-sent events and WebSocket upgrades through.
//
// It knows nothing of homes: a Target brings the dial into the home's
// network and the home's id, so the runner may import this package and
// never the other way.
package preview
