package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// eventStore is an in-memory mcp-go EventStore bounded per session: it
// replays a session's last max events across all of its streams (holding at
// most twice that many), so a client that reconnects with Last-Event-ID is
// redelivered what it missed, and a client that never reads cannot grow the
// host's memory without limit. mcp-go's own InMemoryEventStore keeps every
// event until the session ends. Resuming from an event already dropped
// answers server.ErrUnknownEventID (the client opens a fresh stream). Events
// live in process memory: a host restart forgets them, as it forgets the
// sessions.
type eventStore struct {
	mu       sync.Mutex
	max      int
	seq      int64
	sessions map[string][]storedEvent
}

type storedEvent struct {
	id      int64
	stream  string
	message json.RawMessage
}

func newEventStore(max int) *eventStore {
	return &eventStore{max: max, sessions: map[string][]storedEvent{}}
}

var _ server.EventStore = (*eventStore)(nil)

// StoreEvent records message as the session's next event.
func (s *eventStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	evs := append(s.sessions[sessionID], storedEvent{id: s.seq, stream: streamID, message: append(json.RawMessage(nil), message...)})
	// Trimmed to the last max only once twice that many are held, so a
	// full session's event costs a copy of max events every max events,
	// not on every one (which was most of a /mcp call's allocation).
	// Replay never looks past the last max.
	if len(evs) >= 2*s.max {
		evs = append(evs[:0:0], evs[len(evs)-s.max:]...)
	}
	s.sessions[sessionID] = evs
	return strconv.FormatInt(s.seq, 10), nil
}

// ReplayEventsAfter sends the events after lastEventID on its stream.
func (s *eventStore) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	id, err := strconv.ParseInt(lastEventID, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: %q", server.ErrUnknownEventID, lastEventID)
	}
	s.mu.Lock()
	evs := s.sessions[sessionID]
	if len(evs) > s.max {
		evs = evs[len(evs)-s.max:]
	}
	i := sort.Search(len(evs), func(i int) bool { return evs[i].id >= id })
	if i == len(evs) || evs[i].id != id {
		s.mu.Unlock()
		return "", fmt.Errorf("%w: %q", server.ErrUnknownEventID, lastEventID)
	}
	stream := evs[i].stream
	var later []storedEvent
	for _, e := range evs[i+1:] {
		if e.stream == stream {
			later = append(later, e)
		}
	}
	s.mu.Unlock()
	for _, e := range later {
		if err := send(strconv.FormatInt(e.id, 10), e.message); err != nil {
			return stream, err
		}
	}
	return stream, nil
}

// PurgeSession forgets a finished session's events.
func (s *eventStore) PurgeSession(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionID)
	return nil
}
