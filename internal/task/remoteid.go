package task

import "strings"

// RemoteIDPlaceholder stands in error texts where the remote task id was:
// a task's error and its poll and cancel errors are shown to the agent,
// who knows only the local id.
const RemoteIDPlaceholder = "[remote task id]"

// WithoutRemoteID replaces every occurrence of id in s that is not part of a
// longer word (letters, digits, '_' or '-' on either side).
func WithoutRemoteID(s, id string) string {
	if id == "" || !strings.Contains(s, id) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, id)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(id)
		if idChar(s[:i], true) || idChar(s[end:], false) {
			b.WriteString(s[:end])
		} else {
			b.WriteString(s[:i])
			b.WriteString(RemoteIDPlaceholder)
		}
		s = s[end:]
	}
}

// idChar reports whether the byte next to a match (the last of before or
// the first of after) continues a word.
func idChar(s string, last bool) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if last {
		c = s[len(s)-1]
	}
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// scrubbedError is an error with the remote id cut from its text; the
// original stays in the chain so permanent and retryable errors are still
// told apart.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// ScrubRemoteID cuts id from a driver's answer: the snapshot's error and
// the error's text (the error itself stays in the chain, so permanent and
// retryable errors are still told apart).
func ScrubRemoteID(s State, err error, id string) (State, error) {
	s.Error = WithoutRemoteID(s.Error, id)
	if err != nil {
		if msg := WithoutRemoteID(err.Error(), id); msg != err.Error() {
			err = &scrubbedError{msg: msg, err: err}
		}
	}
	return s, err
}
