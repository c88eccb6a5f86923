package task_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
)

// nopDriver is a stand-in Driver for registry tests; it is never called.
type nopDriver struct{}

func (nopDriver) Submit(context.Context, task.SubmitRequest) (task.Submission, error) {
	return task.Submission{}, nil
}
func (nopDriver) Status(context.Context, task.Reference) (task.State, error) {
	return task.State{}, nil
}
func (nopDriver) Cancel(context.Context, task.Reference) (task.State, error) {
	return task.State{}, nil
}

func TestRegistryRegister(t *testing.T) {
	tests := []struct {
		name     string
		existing []string
		register string
		driver   task.Driver
		want     string // "" = success
	}{
		{name: "ok", register: "ordinary-tools", driver: nopDriver{}},
		{name: "empty", register: "", driver: nopDriver{}, want: "driver name must not be empty"},
		{name: "blank", register: " \t ", driver: nopDriver{}, want: "driver name must not be empty"},
		{name: "duplicate", existing: []string{"x"}, register: "x", driver: nopDriver{}, want: "MCP task driver 'x' is already registered"},
		{name: "duplicate after trim", existing: []string{"x"}, register: "  x ", driver: nopDriver{}, want: "MCP task driver 'x' is already registered"},
		{name: "nil driver", register: "x", driver: nil, want: "MCP task driver 'x' must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r task.Registry
			for _, n := range tt.existing {
				if err := r.Register(n, nopDriver{}); err != nil {
					t.Fatal(err)
				}
			}
			err := r.Register(tt.register, tt.driver)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Register = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Register = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRegistryErrorTypes(t *testing.T) {
	var r task.Registry
	if err := r.Register(" ", nopDriver{}); !errors.Is(err, task.ErrEmptyDriverName) {
		t.Errorf("blank name: %v", err)
	}
	_ = r.Register("x", nopDriver{})
	var dup *task.DuplicateDriverError
	if err := r.Register("x", nopDriver{}); !errors.As(err, &dup) || dup.Name != "x" {
		t.Errorf("duplicate: %v", err)
	}
}

func TestRegistryGetAndNames(t *testing.T) {
	var r task.Registry
	if names := r.Names(); len(names) != 0 {
		t.Fatalf("zero registry names = %v", names)
	}
	for _, n := range []string{"zeta", " ordinary-tools ", "alpha"} {
		if err := r.Register(n, nopDriver{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := r.Names(), []string{"alpha", "ordinary-tools", "zeta"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range []string{"ordinary-tools", " ordinary-tools"} {
		if d, err := r.Get(name); err != nil || d == nil {
			t.Fatalf("Get(%q) = %v, %v", name, d, err)
		}
	}
	_, err := r.Get("missing")
	var unk *task.UnknownDriverError
	if !errors.As(err, &unk) || err.Error() != "No MCP task driver registered as 'missing'" {
		t.Fatalf("Get(missing) = %v", err)
	}
}
