package task

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Driver speaks one remote task protocol. The service calls it outside any
// agent call: Submit from the agent's submit wrapper, Status and Cancel from
// background polling. A *ProtocolError fails the task for good; any other
// error is retried with backoff (see IsRetryable). Drivers must honour ctx:
// shutdown cancels in-flight calls.
type Driver interface {
	// Submit starts the remote task and returns its handle.
	Submit(ctx context.Context, req SubmitRequest) (Submission, error)
	// Status reports the remote task's current state.
	Status(ctx context.Context, ref Reference) (State, error)
	// Cancel asks the remote to cancel and reports the state it ends in,
	// which the service requires to be terminal.
	Cancel(ctx context.Context, ref Reference) (State, error)
}

// Registry maps driver names to drivers. The host builds one at startup and
// hands it to the service; it is not safe for Register concurrently with
// other use. The zero value is an empty registry.
type Registry struct {
	drivers map[string]Driver
}

// Register adds d under name, trimmed. A blank name is ErrEmptyDriverName,
// a taken one a *DuplicateDriverError.
func (r *Registry) Register(name string, d Driver) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return ErrEmptyDriverName
	}
	if d == nil {
		return fmt.Errorf("MCP task driver '%s' must not be nil", name)
	}
	if _, ok := r.drivers[name]; ok {
		return &DuplicateDriverError{Name: name}
	}
	if r.drivers == nil {
		r.drivers = make(map[string]Driver)
	}
	r.drivers[name] = d
	return nil
}

// Get returns the driver registered as name (trimmed), or an
// *UnknownDriverError.
func (r *Registry) Get(name string) (Driver, error) {
	name = strings.TrimSpace(name)
	d, ok := r.drivers[name]
	if !ok {
		return nil, &UnknownDriverError{Name: name}
	}
	return d, nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.drivers))
	for n := range r.drivers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
