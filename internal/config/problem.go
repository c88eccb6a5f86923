package config

import (
	"fmt"
	"strings"
)

// FieldError is one problem in a configuration document, located by the path
// of the field it is about (for example mcpServers.github.args[2]). Messages
// never contain a value that came from an environment variable.
type FieldError struct {
	Path    string
	Message string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Problems is every problem found in one document. It is an error so a loader
// can return all of them at once; callers that want to list them range over it.
type Problems []*FieldError

func (p Problems) Error() string {
	switch len(p) {
	case 0:
		return "no problems"
	case 1:
		return p[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(p))
	for _, e := range p {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// joinPath appends a key to a dotted field path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath appends a list index to a field path.
func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
