// Package pageshot takes screenshots of web pages in a warm headless
// Chromium and turns them, or images an agent saved, into JPEGs small
// enough to send to a phone.
//
// The files by concept: browser.go is the browser's life (one goroutine
// owns a warm Chromium and takes the shots, in turn, over a channel, until
// Close); launch.go starts Chromium; tab.go is the warm tab a shot runs in
// (its browser context and proxy, crashes, dialogs and timeout); shot.go
// takes the shot itself (viewport, full page, the ladder of renderings
// under the byte ceiling); compress.go brings an image already taken under
// the same ceiling.
package pageshot
