package config

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
)

// presentationFields are the server fields durable task calls do not depend
// on; they stay hot-reloadable while the rest of a task server's entry is
// frozen until a restart.
var presentationFields = []string{"description", "routing", "tools", "tool_name_prefix"}

// TaskFreeze fingerprints what durable task calls depend on: every enabled
// server with task_toolsets or a task driver (its whole configuration but the presentation
// fields) and, when there is any, the mcpInterceptors list. The host takes
// one at startup; background polls of tasks submitted under it must not run
// against a different configuration, so a later file whose TaskFreeze
// differs is refused for task calls until a restart.
type TaskFreeze struct {
	servers      map[string][32]byte
	interceptors [32]byte
}

// TaskFreeze returns e's fingerprint of task-enabled servers.
func (e *Extensions) TaskFreeze() TaskFreeze {
	f := TaskFreeze{servers: map[string][32]byte{}}
	for _, s := range e.Enabled() {
		if len(s.TaskToolsets) == 0 && len(s.Driver) == 0 {
			continue
		}
		o := s.fileObject(false)
		for _, k := range presentationFields {
			o.Delete(k)
		}
		b, _ := o.MarshalJSON()
		f.servers[s.Name] = sha256.Sum256(b)
	}
	if len(f.servers) > 0 {
		b, _ := json.Marshal(e.InterceptorSpecs)
		f.interceptors = sha256.Sum256(b)
	}
	return f
}

// Servers returns the task-enabled servers' names, sorted.
func (f TaskFreeze) Servers() []string {
	names := make([]string, 0, len(f.servers))
	for name := range f.servers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Drift names what differs in now from f: task-enabled servers added,
// removed or changed (sorted), then "mcpInterceptors" if that list changed.
// It is empty when task calls may proceed.
func (f TaskFreeze) Drift(now TaskFreeze) []string {
	var names []string
	for name, sum := range f.servers {
		if other, ok := now.servers[name]; !ok || other != sum {
			names = append(names, name)
		}
	}
	for name := range now.servers {
		if _, ok := f.servers[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(f.servers) > 0 && len(now.servers) > 0 && f.interceptors != now.interceptors {
		names = append(names, "mcpInterceptors")
	}
	return names
}
