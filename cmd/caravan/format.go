package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// formatList aligns rows into columns; the first row is the header.
func formatList(rows [][]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// formatKV aligns "key = value" lines, as Nomad prints a single object.
func formatKV(pairs [][2]string) string {
	width := 0
	for _, p := range pairs {
		width = max(width, len([]rune(p[0])))
	}
	lines := make([]string, len(pairs))
	for i, p := range pairs {
		lines[i] = p[0] + strings.Repeat(" ", width-len([]rune(p[0]))) + " = " + p[1]
	}
	return strings.Join(lines, "\n")
}

// formatTime renders Unix nanoseconds in RFC 3339, local time; zero is "-".
func formatTime(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).Local().Format(time.RFC3339)
}

// indent indents every line of s by four spaces.
func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// nodeID is how lists print a node's ID: its first 8 characters, as
// Nomad's CLI prints IDs, or the whole ID when verbose (-verbose).
func nodeID(id string, verbose bool) string {
	if verbose {
		return id
	}
	return shortID(id)
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// capitalise starts msg, an error's text, with a capital, as the CLI
// prints its errors.
func capitalise(msg string) string {
	if msg == "" {
		return msg
	}
	r, n := utf8.DecodeRuneInString(msg)
	return string(unicode.ToUpper(r)) + msg[n:]
}
