package configadmin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/launchpolicy"
)

type actorKey struct{}

// WithActor names in ctx who makes the edits (the principal's user id), for
// the audit log.
func WithActor(ctx context.Context, user, action string) context.Context {
	return context.WithValue(ctx, actorKey{}, [2]string{user, action})
}

func actorOf(ctx context.Context) (user, action string) {
	v, _ := ctx.Value(actorKey{}).([2]string)
	return v[0], v[1]
}

// changes lists what an edit changed, server by server in name order: the
// servers added and removed, and for the others the fields (dotted paths,
// one level into objects such as env or headers) whose values differ —
// names only, never values.
func changes(before, after *config.Extensions) []audit.ServerChange {
	slices := func(e *config.Extensions) map[string][]byte {
		m := map[string][]byte{}
		if e != nil {
			for _, s := range e.Servers {
				m[s.Name] = s.Slice()
			}
		}
		return m
	}
	old, now := slices(before), slices(after)
	var out []audit.ServerChange
	for _, n := range unionKeys(old, now) {
		o, hadOld := old[n]
		c, hasNew := now[n]
		switch {
		case !hadOld:
			out = append(out, audit.ServerChange{Server: n, Change: audit.ChangeAdded})
		case !hasNew:
			out = append(out, audit.ServerChange{Server: n, Change: audit.ChangeRemoved})
		case string(o) != string(c):
			out = append(out, audit.ServerChange{Server: n, Change: audit.ChangeUpdated, Fields: differingFields(o, c)})
		}
	}
	return out
}

// differingFields names the fields of two canonical server objects that
// differ, descending one level into objects.
func differingFields(a, b []byte) []string {
	var x, y map[string]json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return nil
	}
	var out []string
	for _, k := range unionKeys(x, y) {
		if string(x[k]) == string(y[k]) {
			continue
		}
		var xo, yo map[string]json.RawMessage
		if json.Unmarshal(x[k], &xo) == nil && json.Unmarshal(y[k], &yo) == nil && xo != nil && yo != nil {
			for _, sub := range unionKeys(xo, yo) {
				if string(xo[sub]) != string(yo[sub]) {
					out = append(out, k+"."+sub)
				}
			}
			continue
		}
		out = append(out, k)
	}
	return out
}

// unionKeys are the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// rejection is the reason label of a refused edit.
func rejection(err error) string {
	var pe *launchpolicy.Error
	if errors.As(err, &pe) {
		return "launch_policy"
	}
	var ae *apierror.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case http.StatusBadRequest:
			return "invalid"
		case http.StatusNotFound:
			return "not_found"
		case http.StatusConflict:
			return "conflict"
		case http.StatusServiceUnavailable:
			return "lock_timeout"
		}
	}
	return "error"
}
