// Package deepchat speaks the connect format of the deep-chat web component
// (version 2): it reads the body deep-chat posts — JSON, or multipart when
// it sends files — into a chatd turn request, finds the one-click answers
// of a pending question, and writes a turn's events as the answers deep-chat
// reads.
//
// Every answer is HTML (deep-chat renders text as Markdown and links any
// URL scheme, so chatd never sends it text): a JSON answer is {"html"}; a
// stream is {"html"} events of escaped text deltas, then one {"html",
// "overwrite": true} with the whole reply rendered. A failure is {"error"}.
//
// Script is chatd.js, the ES module a page gives the element so that the
// forms of questions post their answers.
package deepchat

import _ "embed"

// Script is chatd.js.
//
//go:embed static/chatd.js
var Script []byte
